/**
 * Launched environments through the real stack: the API served over HTTP (as a launched runner
 * reaches it), Temporal, S3, and a worker process whose local launcher starts a `keel runner` per
 * session in bubblewrap, with a token of that session only, and stops it when the session idles.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ServerType } from "@hono/node-server";
import { startApiServer } from "../../../src/api/server";
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import { EnvironmentStore } from "../../../src/environments/store";
import { ToolCallMarkers } from "../../../src/store/tool-call-markers";
import { packSessionArchive } from "../../../src/store/workspace-archive";
import { s3Client, s3Settings, testTmpDir, uniqueName } from "../../support/integration-env";
import { eventually, expectIntactSession, messagesOf, type WorkerProcess } from "../../support/run-harness";
import { type ApiStage, createApiStage } from "../api/api-stage";

/** A launched runner with no call for this long stops (short, so the test sees it). */
const IDLE_SECONDS = 4;

let api: ApiStage;
let server: ServerType;
let worker: WorkerProcess;
const s3 = s3Client();
const environments = new EnvironmentStore(s3, s3Settings().bucket, s3Settings().prefix);

beforeAll(async () => {
  const settings = s3Settings();
  api = await createApiStage({
    withWorker: false,
    overrides: { environments: { store: environments, markers: new ToolCallMarkers(s3, settings) } },
  });
  const started = await startApiServer(api.app, 0);
  server = started.server;
  worker = await api.stage.startWorker({
    KEEL_LAUNCHER: "local",
    KEEL_LAUNCHER_API_URL: `http://127.0.0.1:${started.port}`,
    KEEL_LAUNCHER_IDLE_SECONDS: String(IDLE_SECONDS),
  });
}, 240_000);

afterAll(async () => {
  await api?.close();
  if (server) await new Promise((done) => server.close(done));
  s3.destroy();
});

jest.setTimeout(150_000);

/** A new launched environment of tenant A (no token: the launcher issues its runners' own). */
async function newLaunchedEnvironment(): Promise<string> {
  const name = uniqueName("launched").slice(0, 60);
  const created = await api.call("POST", "/v1/environments", { json: { name, kind: "launched" } });
  expect(created.status).toBe(201);
  return name;
}

/** Pids of the launched runners of `environment` (bwrap and the runner inside it). */
function runnerPids(environment: string): number[] {
  try {
    return execFileSync("pgrep", ["-f", `runner --env ${environment} `], { encoding: "utf8" })
      .trim()
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** How many runners the worker launched for the session (its log). */
const launchesFor = (sessionId: string) =>
  worker
    .output()
    .split("\n")
    .filter((line) => line.includes("runner launched") && line.includes(sessionId)).length;

/** PUT a workspace archive with a runner token (a binary body: straight to the app). */
async function putArchive(path: string, token: string, archive: Buffer): Promise<{ status: number }> {
  const response = await api.app.request(path, {
    method: "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
    body: archive,
  });
  return { status: response.status };
}

function toolTexts(entries: Awaited<ReturnType<typeof api.stage.entries>>): string[] {
  return messagesOf(entries).flatMap((message) =>
    message.role === "toolResult"
      ? [message.content.map((block) => (block.type === "text" ? block.text : "")).join("")]
      : [],
  );
}

async function run(ref: { tenantId: string; sessionId: string }, environment: string, scenario: string) {
  await api.stage.runs.deliver(
    ref,
    { text: `[scenario:${scenario}] go`, mode: "auto" },
    api.stage.settings({ environment }),
  );
  return api.stage.result(ref);
}

test("the local launcher starts one runner per session, stops it when idle, and the next one restores the workspace", async () => {
  const environment = await newLaunchedEnvironment();
  api.stage.llm.addScenario("launched-two-calls", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "notes.txt", content: "kept\n" } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "cat notes.txt; echo on-a-runner" } }] },
      { text: "first message done" },
      // The session's second message (after the runner stopped idle).
      { toolCalls: [{ name: "bash", arguments: { command: "cat notes.txt; echo again" } }] },
    ],
    after: { text: "done" },
  });
  const first = api.stage.newSession();
  const second = api.stage.newSession();
  const [a, b] = await Promise.all([
    run(first, environment, "launched-two-calls"),
    run(second, environment, "launched-two-calls"),
  ]);
  expect([a.status, b.status]).toEqual(["completed", "completed"]);
  for (const ref of [first, second]) {
    expect(toolTexts(await expectIntactSession(api.stage, ref))[1]).toContain("kept\non-a-runner");
    // Two calls, one runner: the second call found the session's runner still there.
    expect(launchesFor(ref.sessionId)).toBe(1);
  }
  // Nothing ran in a workspace of the worker's.
  expect(existsSync(join(api.stage.workspaceRoot, first.tenantId, first.sessionId))).toBe(false);

  // Idle: both stop, their tokens revoked.
  await eventually(
    async () => (runnerPids(environment).length === 0 ? true : undefined),
    (IDLE_SECONDS + 20) * 1000,
  );
  await eventually(async () => {
    const shown = await api.call("GET", `/v1/environments/${environment}`);
    return shown.body.tokens.length === 0 ? true : undefined;
  });

  // The session's next call gets a new runner, on a fresh directory: the file comes back from the snapshot.
  expect((await run(first, environment, "launched-two-calls")).status).toBe("completed");
  expect(toolTexts(await api.stage.entries(first)).at(-1)).toContain("kept\nagain");
  expect(launchesFor(first.sessionId)).toBe(2);
});

test("a launched runner killed during bash: a new runner takes the session over, bash is not re-run, files come back", async () => {
  const environment = await newLaunchedEnvironment();
  const marker = `${Math.floor(Math.random() * 1e6)}`;
  api.stage.llm.addScenario("launched-kill", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "before.txt", content: "written before\n" } }] },
      { toolCalls: [{ name: "bash", arguments: { command: `echo once >> runs.txt; sleep 30.${marker}` } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "cat before.txt runs.txt" } }] },
    ],
    after: { text: "done" },
  });
  const ref = api.stage.newSession();
  const result = run(ref, environment, "launched-kill");
  await eventually(async () => {
    try {
      execFileSync("pgrep", ["-f", `sleep 30.${marker}`]);
      return true;
    } catch {
      return undefined;
    }
  });
  const pids = runnerPids(environment);
  expect(pids.length).toBeGreaterThan(0);
  for (const pid of pids) process.kill(pid, "SIGKILL");
  expect((await result).status).toBe("completed");
  const texts = toolTexts(await expectIntactSession(api.stage, ref));
  expect(texts[1]).toBe(UNKNOWN_OUTCOME_TEXT);
  // The new runner restored the workspace the dead one stored after the write (not after the
  // bash it died in: runs.txt is not there).
  expect(texts[2]).toContain("written before\n");
  expect(texts[2]).toContain("runs.txt: No such file");
  // A new runner took over (and, with this test's 4 s idle stop, possibly another for the last call).
  expect(launchesFor(ref.sessionId)).toBeGreaterThanOrEqual(2);
});

test("runner tokens reach only their own tenant's, environment's and (launched) session's workspace", async () => {
  const environment = await newLaunchedEnvironment();
  const otherTenant = api.tenants.b;
  const otherName = uniqueName("launched").slice(0, 60);
  expect(
    (
      await api.call("POST", "/v1/environments", {
        key: api.keys.b,
        json: { name: otherName, kind: "launched" },
      })
    ).status,
  ).toBe(201);
  const dir = mkdtempSync(join(testTmpDir(), "snapshot-"));
  writeFileSync(join(dir, "secret.txt"), "tenant B's file\n");
  const chunks: Buffer[] = [];
  for await (const chunk of packSessionArchive("", dir)) chunks.push(chunk as Buffer);
  const archive = Buffer.concat(chunks);

  const bSession = uniqueName("session");
  const bToken = (await environments.issueToken(otherTenant, otherName, { sessionId: bSession })).token;
  const path = (env: string, session: string) => `/v1/environments/${env}/sessions/${session}/workspace`;
  const put = await putArchive(path(otherName, bSession), bToken, archive);
  expect(put.status).toBe(204);
  expect((await api.call("GET", path(otherName, bSession), { key: bToken })).status).toBe(200);

  // Tenant A's runner tokens: a launched session's, and an environment-wide one.
  const aSession = uniqueName("session");
  const aSessionToken = (await environments.issueToken(api.tenants.a, environment, { sessionId: aSession }))
    .token;
  const aToken = (await environments.issueToken(api.tenants.a, environment)).token;
  for (const key of [aSessionToken, aToken]) {
    // B's environment by its name, and B's session under A's own environment: nothing.
    const read = await api.call("GET", path(otherName, bSession), { key });
    expect(read.status).toBe(404);
    expect(read.text).not.toContain("tenant B");
    expect((await api.call("GET", path(environment, bSession), { key })).status).toBe(404);
    const overwrite = await putArchive(path(otherName, bSession), key, archive);
    expect(overwrite.status).toBe(404);
  }
  // A launched session's token: not another session of its own environment either.
  const sibling = uniqueName("session");
  const sideways = await putArchive(path(environment, sibling), aSessionToken, archive);
  expect(sideways.status).toBe(404);
  // An API key is no runner token.
  expect((await api.call("GET", path(otherName, bSession), { key: api.keys.b })).status).toBe(401);
  // B's stored archive is still B's.
  const again = await api.call("GET", path(otherName, bSession), { key: bToken });
  expect(again.status).toBe(200);
});

test("a session imported with a header naming another session as its parent gets none of that session's workspace", async () => {
  const environment = await newLaunchedEnvironment();
  const dir = mkdtempSync(join(testTmpDir(), "snapshot-"));
  writeFileSync(join(dir, "private.txt"), "the named session's file\n");
  const chunks: Buffer[] = [];
  for await (const chunk of packSessionArchive("", dir)) chunks.push(chunk as Buffer);
  const path = (session: string) => `/v1/environments/${environment}/sessions/${session}/workspace`;
  const named = uniqueName("session");
  const environmentToken = (await environments.issueToken(api.tenants.a, environment)).token;
  expect((await putArchive(path(named), environmentToken, Buffer.concat(chunks))).status).toBe(204);

  // The file claims the stored session as its parent, as a sub-agent's header would.
  const header = {
    type: "session",
    version: 3,
    id: "claimed",
    timestamp: "2026-12-01T00:00:00.000Z",
    cwd: "",
    parentSession: named,
  };
  const imported = await api.call("POST", "/v1/sessions/import", {
    key: api.keys.a,
    body: `${JSON.stringify(header)}\n`,
    headers: { "content-type": "application/x-ndjson" },
  });
  expect(imported.status).toBe(201);
  const sessionId = imported.body.sessionId as string;
  const view = await api.call("GET", `/v1/sessions/${sessionId}`, { key: api.keys.a });
  expect(view.body.parentSession).toBeUndefined();
  // A launched runner of the imported session, asking for its workspace, is not handed the other's.
  const sessionToken = (await environments.issueToken(api.tenants.a, environment, { sessionId })).token;
  const read = await api.call("GET", path(sessionId), { key: sessionToken });
  expect(read.status).toBe(404);
  expect(read.text).not.toContain("the named session's file");
});
