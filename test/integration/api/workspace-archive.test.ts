/**
 * Export with the workspace and import of that archive (real worker, real runs, real S3): the
 * archive opens with GNU tar, and the first run of the imported session sees the archive's files.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TurnContext } from "../../../src/providers/local-server/types";
import { workspaceFor } from "../../../src/tools/workspace";
import { testTmpDir } from "../../support/integration-env";
import { messagesOf } from "../../support/run-harness";
import { type FixtureEntry, gzipBomb, tarGzOf } from "../../support/tar-fixture";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;

beforeAll(async () => {
  api = await createApiStage();
  const lastUser = (context: TurnContext) =>
    context.request.messages.filter((message) => message.role === "user").at(-1)?.text ?? "";
  // The first run writes two files; a later message saying "check" reads a file a user added.
  api.stage.llm.addScenario("ws-archive", {
    turns: [
      {
        toolCalls: [
          { name: "write", arguments: { path: "a.txt", content: "from the first run\n" } },
          { name: "write", arguments: { path: "sub/b.txt", content: "nested\n" } },
        ],
      },
      { text: "written" },
    ],
    after: (context) =>
      lastUser(context).includes("check") && !context.request.messages.at(-1)?.role.startsWith("tool")
        ? { toolCalls: [{ name: "bash", arguments: { command: "cat a.txt sub/b.txt added.txt" } }] }
        : { text: "Files: {{lastToolResult}}" },
  });
});

afterAll(async () => {
  await api?.close();
});

const gzipHeaders = { "content-type": "application/gzip" };

test("a gzip bomb is refused as 413 with what it expands to; the server stays up", async () => {
  // ~200 KB (under the stage's 256 KiB body limit) that would unpack to 200 MiB of zeros. The body
  // is read whole (it is bounded); the refusal names the bytes unpacked when it tripped: about
  // 100 times the body, far from the 200 MiB an unpack-then-check would reach.
  const bomb = gzipBomb(200 * 1024 ** 2);
  const chunks: Uint8Array[] = [];
  for await (const chunk of bomb.source) chunks.push(chunk);
  const response = await api.call("POST", "/v1/sessions/import", {
    body: Buffer.concat(chunks) as unknown as string,
    headers: gzipHeaders,
  });
  expectProblem(response, 413, "payload-too-large");
  const tripped = /expands more than 100 times \((\d+) bytes from \d+ read\)/.exec(response.body.detail);
  expect(Number(tripped?.[1])).toBeLessThan(32 * 1024 ** 2);
  expect((await api.call("GET", "/v1/sessions")).status).toBe(200);
});

test("export --with-workspace gives a .tar.gz a user can unpack, edit and import; the next run sees its files", async () => {
  const sessionId = api.sessionId();
  await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: { text: "[scenario:ws-archive] go" },
  });
  expect((await api.stage.result({ tenantId: api.tenants.a, sessionId })).status).toBe("completed");

  const exported = await api.app.request(`/v1/sessions/${sessionId}/export?workspace=true`, {
    headers: { authorization: `Bearer ${api.keys.a}` },
  });
  expect(exported.status).toBe(200);
  expect(exported.headers.get("content-type")).toBe("application/gzip");
  expect(exported.headers.get("x-keel-workspace-entry")).toEqual(expect.any(String));
  const dir = mkdtempSync(join(testTmpDir(), "archive-"));
  writeFileSync(join(dir, "s.tar.gz"), Buffer.from(await exported.arrayBuffer()));
  execFileSync("tar", ["xzf", "s.tar.gz"], { cwd: dir });
  expect(readFileSync(join(dir, "workspace/a.txt"), "utf8")).toBe("from the first run\n");
  expect(readFileSync(join(dir, "workspace/sub/b.txt"), "utf8")).toBe("nested\n");
  const jsonl = readFileSync(join(dir, "session.jsonl"), "utf8");
  expect(jsonl.split("\n").filter(Boolean)).toHaveLength(
    (await api.stage.entries({ tenantId: api.tenants.a, sessionId })).length + 1,
  );

  // A user adds a file with standard tools and imports the archive again.
  const importKey = api.sessionId();
  writeFileSync(join(dir, "workspace/added.txt"), "added by hand\n");
  execFileSync("tar", ["czf", "edited.tar.gz", "session.jsonl", "workspace"], { cwd: dir });
  const imported = await api.call("POST", "/v1/sessions/import", {
    body: readFileSync(join(dir, "edited.tar.gz")) as unknown as string,
    // With a key the idempotency record reads the body first: the import unpacks Hono's copy.
    headers: { ...gzipHeaders, "idempotency-key": `archive-${importKey}` },
  });
  expect(imported.status).toBe(201);
  expect(imported.body.workspace).toEqual({ files: 3, bytes: expect.any(Number) });
  const importedId = imported.body.sessionId as string;

  await api.call("POST", `/v1/sessions/${importedId}/messages`, { json: { text: "check the files" } });
  const ref = { tenantId: api.tenants.a, sessionId: importedId };
  expect((await api.stage.result(ref)).status).toBe("completed");
  const answer = messagesOf(await api.stage.entries(ref)).at(-1);
  const text = answer?.role === "assistant" ? JSON.stringify(answer.content) : "";
  expect(text).toContain("from the first run");
  expect(text).toContain("nested");
  expect(text).toContain("added by hand");
  const workspace = workspaceFor(api.stage.workspaceRoot, api.tenants.a, importedId).dir;
  expect(readFileSync(join(workspace, "added.txt"), "utf8")).toBe("added by hand\n");
}, 120_000);

test("crafted archives are refused with a clear error, and no session is created", async () => {
  const session = JSON.stringify({
    type: "session",
    version: 3,
    id: "escape",
    timestamp: "2026-01-01T00:00:00.000Z",
    cwd: "",
  });
  const before = (await api.call("GET", "/v1/sessions?limit=1000")).body.sessions.length;
  // Another tenant's session workspace, as laid out beside this tenant's under the workspace root.
  const otherWorkspace = `${api.tenants.b}/${api.sessionId()}`;
  const cases: Array<[FixtureEntry[], RegExp]> = [
    [[{ path: "workspace/../../evil.txt", body: "x" }], /".." would leave/],
    [[{ path: "/tmp/evil.txt", body: "x" }], /absolute paths are refused/],
    [[{ path: "workspace/out", type: "SymbolicLink", linkpath: "../../.." }], /outside the workspace/],
    [[{ path: "workspace/passwd", type: "SymbolicLink", linkpath: "/etc/passwd" }], /outside the workspace/],
    [
      [
        { path: "workspace/d/", type: "Directory" },
        { path: "workspace/d/l1", type: "SymbolicLink", linkpath: ".." },
        { path: "workspace/.keel", type: "SymbolicLink", linkpath: `d/l1/../../${otherWorkspace}` },
      ],
      /"workspace\/.keel" is refused: .*outside the workspace/,
    ],
    [
      [
        { path: "workspace/a", body: "a" },
        { path: "workspace/b", type: "Link", linkpath: "workspace/a" },
      ],
      /is a hard link/,
    ],
    [[{ path: "workspace/p", type: "FIFO" }], /is a FIFO/],
  ];
  for (const [entries, message] of cases) {
    const archive = tarGzOf([{ path: "session.jsonl", body: `${session}\n` }, ...entries]);
    const response = await api.call("POST", "/v1/sessions/import", {
      body: archive as unknown as string,
      headers: gzipHeaders,
    });
    expectProblem(response, 400, "invalid-session-file");
    expect(response.body.detail).toMatch(message);
  }
  expect((await api.call("GET", "/v1/sessions?limit=1000")).body.sessions.length).toBe(before);
});
