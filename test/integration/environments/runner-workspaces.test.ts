/**
 * Workspaces of `keel runner --snapshots` kept through the API, with runners on separate disks: a
 * runner uses its copy only while it is the stored generation, restores the newer one otherwise,
 * and a store that is refused, fails or loses the race makes the call's result say its files were
 * not kept — the real API, Temporal, S3 and `keel runner` processes.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import { EnvironmentStore } from "../../../src/environments/store";
import { unpackSessionArchive } from "../../../src/store/workspace-archive";
import { s3Client, s3Settings, testTmpDir, uniqueName } from "../../support/integration-env";
import { eventually, expectIntactSession, messagesOf } from "../../support/run-harness";
import type { ApiStage } from "../api/api-stage";
import {
  processesMatching,
  type RunnerProcess,
  type RunnerStage,
  useRunnerStage,
  workspaceRoot,
} from "./runner-stage";

let stage: RunnerStage;
let api: ApiStage;

useRunnerStage((created) => {
  stage = created;
  api = created.api;
});

// Runner processes started and stopped between the calls of one run, on a shared machine.
jest.setTimeout(180_000);

const environments = () => new EnvironmentStore(s3Client(), s3Settings().bucket, s3Settings().prefix);

/** The files of the session's workspace as the API stores it for the environment. */
async function storedFiles(environment: string, ref: { tenantId: string; sessionId: string }) {
  const stored = await environments().getWorkspace(ref.tenantId, environment, ref.sessionId);
  if (!stored || stored === "current") throw new Error("no workspace is stored for the session");
  const dir = join(mkdtempSync(join(testTmpDir(), "stored-")), "workspace");
  await unpackSessionArchive(Readable.from([Buffer.from(stored.archive)]), dir);
  return { dir, names: readdirSync(dir).sort() };
}

/** The text and error flag of each tool result of the session, in order (of the ended run's checked session). */
async function results(ref: { tenantId: string; sessionId: string }) {
  return resultsIn(await expectIntactSession(api.stage, ref));
}

/** How many tool results the session has stored so far (while its run goes on). */
async function storedResults(ref: { tenantId: string; sessionId: string }): Promise<number> {
  return resultsIn(await api.stage.entries(ref)).length;
}

function resultsIn(entries: Awaited<ReturnType<typeof api.stage.entries>>) {
  return messagesOf(entries).flatMap((message) =>
    message.role === "toolResult"
      ? [
          {
            isError: message.isError,
            text: message.content.map((block) => (block.type === "text" ? block.text : "")).join("\n"),
          },
        ]
      : [],
  );
}

/** Starts a run of `turns` tool calls on the environment, each waiting for approval (so a test picks the runner). */
async function stepByStep(
  environment: string,
  turns: { name: string; arguments: Record<string, unknown> }[],
) {
  const scenario = uniqueName("steps");
  api.stage.llm.addScenario(scenario, {
    turns: turns.map((call) => ({ toolCalls: [call] })),
    after: { text: "done" },
  });
  const ref = api.stage.newSession();
  const settings = api.stage.settings({
    environment,
    policy: { rules: [], default: "ask", approvalTimeoutMs: 120_000 },
  });
  await api.stage.runs.deliver(ref, { text: `[scenario:${scenario}] go`, mode: "auto" }, settings);
  const approved = new Set<string>();
  return {
    ref,
    /** Approves the next call once it waits, so that the runner up now runs it. */
    async approveNext() {
      const toolCallId = await eventually(async () => {
        const state = await api.stage.runs.state(ref);
        return state?.pendingToolCalls.find(
          (call) => call.state === "awaiting_approval" && !approved.has(call.toolCallId),
        )?.toolCallId;
      }, 60_000);
      approved.add(toolCallId);
      await api.stage.runs.approve(ref, { toolCallId, decision: "approve" });
    },
  };
}

/** Waits until the runner has said it started (its claim long poll follows at once). */
async function started(runner: RunnerProcess): Promise<RunnerProcess> {
  await eventually(async () => (runner.output().includes("runner started") ? true : undefined), 60_000);
  return runner;
}

test("two runners with --snapshots on separate disks, alternating calls: every edit is stored", async () => {
  const env = await stage.newEnvironment();
  const roots = [workspaceRoot(), workspaceRoot()];
  const writes = ["f1", "f2", "f3", "f4"].map((name) => ({
    name: "write",
    arguments: { path: `${name}.txt`, content: `${name}\n` },
  }));
  const run = await stepByStep(env.name, writes);
  let up: RunnerProcess | undefined;
  // Runner 1, 2, 1, 2: each meets a copy it holds (from its own earlier call) that another
  // runner has changed since, or none.
  for (const [index] of writes.entries()) {
    await up?.kill();
    up = await started(
      stage.startRunner(env.name, env.token, ["--workspace-root", roots[index % 2] ?? "", "--snapshots"]),
    );
    await run.approveNext();
    // The call has run (and stored) before the runner is swapped.
    await eventually(async () => ((await storedResults(run.ref)) > index ? true : undefined), 60_000);
  }
  expect((await api.stage.result(run.ref)).status).toBe("completed");
  expect((await results(run.ref)).map((result) => result.isError)).toEqual([false, false, false, false]);
  const stored = await storedFiles(env.name, run.ref);
  expect(stored.names).toEqual(["f1.txt", "f2.txt", "f3.txt", "f4.txt"]);
  // Runner 1's copy, restored before its second call, holds runner 2's first edit.
  expect(readdirSync(join(roots[0] ?? "", run.ref.sessionId)).sort()).toEqual(["f1.txt", "f2.txt", "f3.txt"]);
  expect(readFileSync(join(roots[1] ?? "", run.ref.sessionId, "f4.txt"), "utf8")).toBe("f4\n");
});

test("a store the API refuses as too large: the call's result says its files were not kept, and they are gone", async () => {
  const env = await stage.newEnvironment();
  const root = workspaceRoot();
  const run = await stepByStep(env.name, [
    { name: "write", arguments: { path: "kept.txt", content: "kept\n" } },
    // Random bytes: the archive stays over the stage's 256 KiB body limit once compressed.
    { name: "bash", arguments: { command: "head -c 400000 /dev/urandom > big.bin; echo made" } },
    { name: "bash", arguments: { command: "ls" } },
  ]);
  await started(stage.startRunner(env.name, env.token, ["--workspace-root", root, "--snapshots"]));
  for (let call = 0; call < 3; call++) await run.approveNext();
  expect((await api.stage.result(run.ref)).status).toBe("completed");
  const [write, big, listing] = await results(run.ref);
  expect(write?.isError).toBe(false);
  expect(big?.isError).toBe(true);
  expect(big?.text).toContain("made");
  expect(big?.text).toContain(
    "The files this call changed were not kept: the workspace is larger than the API takes",
  );
  // The next call, on the same runner, works in the workspace as stored: without the big file.
  expect(listing?.text.trim()).toBe("kept.txt");
  expect((await storedFiles(env.name, run.ref)).names).toEqual(["kept.txt"]);
  expect(existsSync(join(root, run.ref.sessionId, "big.bin"))).toBe(false);
});

test("a store that fails at the API: the result says the files were not kept; the next store goes on from the stored one", async () => {
  const env = await stage.newEnvironment();
  const root = workspaceRoot();
  const run = await stepByStep(env.name, [
    { name: "write", arguments: { path: "a.txt", content: "a\n" } },
    { name: "write", arguments: { path: "b.txt", content: "b\n" } },
    { name: "write", arguments: { path: "c.txt", content: "c\n" } },
  ]);
  await started(stage.startRunner(env.name, env.token, ["--workspace-root", root, "--snapshots"]));
  await run.approveNext();
  await eventually(async () => ((await storedResults(run.ref)) > 0 ? true : undefined), 60_000);
  // The API's S3 fails every store of the second call (the runner tries three times).
  const put = jest
    .spyOn(EnvironmentStore.prototype, "putWorkspace")
    .mockRejectedValue(Object.assign(new Error("S3 is unavailable"), { $metadata: { httpStatusCode: 503 } }));
  await run.approveNext();
  await eventually(async () => ((await storedResults(run.ref)) > 1 ? true : undefined), 60_000);
  put.mockRestore();
  await run.approveNext();
  expect((await api.stage.result(run.ref)).status).toBe("completed");
  const [a, b, c] = await results(run.ref);
  expect(a?.isError).toBe(false);
  expect(b?.isError).toBe(true);
  expect(b?.text).toContain("The files this call changed were not kept: the workspace could not be stored");
  expect(c?.isError).toBe(false);
  expect((await storedFiles(env.name, run.ref)).names).toEqual(["a.txt", "c.txt"]);
});

test("the workspace routes: a store names the generation it replaces, a check of the current one is answered 304", async () => {
  const env = await stage.newEnvironment();
  const ref = api.stage.newSession();
  const url = `${stage.apiUrl}/v1/environments/${env.name}/sessions/${ref.sessionId}/workspace`;
  const auth = { authorization: `Bearer ${env.token}` };
  // Any gzip stream is stored as it is (the runner that restores it checks it).
  const archive = (text: string) => {
    const body = Buffer.from(`\x1f\x8b${text}`, "latin1");
    return { method: "PUT", headers: { ...auth, "content-type": "application/gzip" }, body };
  };
  const put = (text: string, headers: Record<string, string>) => {
    const init = archive(text);
    return fetch(url, { ...init, headers: { ...init.headers, ...headers } });
  };
  const first = await put("one", { "if-none-match": "*" });
  expect(first.status).toBe(204);
  const one = first.headers.get("etag") ?? "";
  expect(one).toMatch(/^".+"$/);
  const refused = async (response: Response) => {
    expect(response.status).toBe(412);
    expect(await response.json()).toMatchObject({ type: "https://keel.dev/problems/workspace-changed" });
  };
  // Another runner that also found none stored loses.
  await refused(await put("other", { "if-none-match": "*" }));
  const second = await put("two", { "if-match": one });
  expect(second.status).toBe(204);
  const two = second.headers.get("etag") ?? "";
  expect(two).not.toBe(one);
  // A runner whose copy is generation one is behind: its store is refused, its check restores.
  await refused(await put("stale", { "if-match": one }));
  const behind = await fetch(url, { headers: { ...auth, accept: "application/gzip", "if-none-match": one } });
  expect(behind.status).toBe(200);
  expect(behind.headers.get("etag")).toBe(two);
  expect(Buffer.from(await behind.arrayBuffer()).toString("latin1")).toBe("\x1f\x8btwo");
  const current = await fetch(url, {
    headers: { ...auth, accept: "application/gzip", "if-none-match": two },
  });
  expect(current.status).toBe(304);
  // Not a generation: refused before S3 sees it.
  const odd = await fetch(url, { headers: { ...auth, accept: "application/gzip", "if-none-match": "x\ty" } });
  expect(odd.status).toBe(400);
});

test("a runner session's workspace is one with the rest: exported with the runner's files, imported and picked up by a runner", async () => {
  const env = await stage.newEnvironment();
  const scenario = uniqueName("export-runner");
  // The scenario goes on in the imported copy (it is named by the first message): its third turn.
  api.stage.llm.addScenario(scenario, {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "src/made.txt", content: "on the runner\n" } }] },
      { text: "written" },
      { toolCalls: [{ name: "bash", arguments: { command: "cat src/made.txt" } }] },
    ],
    after: { text: "done" },
  });
  stage.startRunner(env.name, env.token, ["--workspace-root", workspaceRoot(), "--snapshots"]);
  const ref = api.stage.newSession();
  const settings = api.stage.settings({ environment: env.name });
  await api.stage.runs.deliver(ref, { text: `[scenario:${scenario}] go`, mode: "auto" }, settings);
  expect((await api.stage.result(ref)).status).toBe("completed");
  const exported = await fetch(`${stage.apiUrl}/v1/sessions/${ref.sessionId}/export?workspace=true`, {
    headers: { authorization: `Bearer ${api.keys.a}`, accept: "application/gzip" },
  });
  expect(exported.status).toBe(200);
  expect(exported.headers.get("x-keel-workspace-environment")).toBe(env.name);
  const archive = Buffer.from(await exported.arrayBuffer());
  const unpacked = join(mkdtempSync(join(testTmpDir(), "exported-")), "workspace");
  await unpackSessionArchive(Readable.from([archive]), unpacked);
  expect(readFileSync(join(unpacked, "src", "made.txt"), "utf8")).toBe("on the runner\n");

  // Imported (its files recorded as workers record them), then run on a runner on another disk.
  const imported = await fetch(`${stage.apiUrl}/v1/sessions/import`, {
    method: "POST",
    headers: { authorization: `Bearer ${api.keys.a}`, "content-type": "application/gzip" },
    body: archive,
  });
  expect(imported.status).toBe(201);
  const copy = {
    tenantId: ref.tenantId,
    sessionId: ((await imported.json()) as { sessionId: string }).sessionId,
  };
  // No call of the copy is headed to the environment yet: its token reads nothing of it.
  const early = await fetch(
    `${stage.apiUrl}/v1/environments/${env.name}/sessions/${copy.sessionId}/workspace`,
    {
      headers: { authorization: `Bearer ${env.token}`, accept: "application/gzip" },
    },
  );
  expect(early.status).toBe(404);
  await stage.killRunners();
  stage.startRunner(env.name, env.token, ["--workspace-root", workspaceRoot(), "--snapshots"]);
  await api.stage.runs.deliver(copy, { text: "show the file", mode: "auto" }, settings);
  expect((await api.stage.result(copy)).status).toBe("completed");
  expect((await results(copy)).at(-1)).toEqual({ isError: false, text: "on the runner" });
});

test("a workspace source with a runner environment is refused, not silently ignored", async () => {
  const env = await stage.newEnvironment();
  const refused = await api.call("POST", `/v1/sessions/${api.stage.newSession().sessionId}/messages`, {
    key: api.keys.a,
    json: {
      text: "go",
      environment: env.name,
      workspace: { type: "git", url: "https://github.com/acme/app" },
    },
  });
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({
    type: "https://keel.dev/problems/invalid-request",
    errors: [{ path: "workspace", message: "not with a runner or launched environment" }],
  });
  // An empty workspace is what a runner's session starts from anyway.
  const empty = await api.call("POST", `/v1/sessions/${api.stage.newSession().sessionId}/messages`, {
    key: api.keys.a,
    json: { text: "[scenario:none] hi", environment: env.name, workspace: { type: "empty" } },
  });
  expect(empty.status).toBe(202);
});

test("a runner whose call went to another attempt never keeps what that call changed", async () => {
  const env = await stage.newEnvironment();
  const root = workspaceRoot();
  const marker = `${Math.floor(Math.random() * 1e6)}`;
  const run = await stepByStep(env.name, [
    { name: "bash", arguments: { command: `echo once >> runs.txt; sleep 40.${marker}` } },
    { name: "bash", arguments: { command: "cat runs.txt 2>/dev/null || echo none" } },
  ]);
  const first = await started(
    stage.startRunner(env.name, env.token, ["--workspace-root", root, "--snapshots"]),
  );
  await run.approveNext();
  await eventually(async () =>
    existsSync(join(root, run.ref.sessionId, "runs.txt")) &&
    processesMatching(`sleep 40.${marker}`).length > 0
      ? true
      : undefined,
  );
  // The runner stops answering: its heartbeats stop, the call's attempt times out, and the next
  // attempt (on another runner) finds the bash's start marker: an unknown outcome, nothing stored.
  first.child.kill("SIGSTOP");
  const other = stage.startRunner(env.name, env.token, ["--workspace-root", workspaceRoot(), "--snapshots"]);
  await eventually(async () => ((await storedResults(run.ref)) > 0 ? true : undefined), 60_000);
  await other.kill();
  // Back, the first runner learns the call is not its own any more; the next call runs there.
  first.child.kill("SIGCONT");
  await eventually(
    async () => (first.output().includes("call lost to another attempt") ? true : undefined),
    30_000,
  );
  await run.approveNext();
  expect((await api.stage.result(run.ref)).status).toBe("completed");
  const [lost, next] = await results(run.ref);
  expect(lost?.text).toBe(UNKNOWN_OUTCOME_TEXT);
  // What the lost call did stays out of the workspace, as its result told the model.
  expect(next).toEqual({ isError: false, text: "none" });
  expect((await storedFiles(env.name, run.ref)).names).toEqual([]);
});
