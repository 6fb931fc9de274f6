/**
 * The workspace follows the session, not the worker: after a batch that may change files the run
 * records the workspace in S3; a worker that never held it restores it when it takes over, and
 * going back in the conversation (branch) goes back in the files.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { workspaceFor } from "../../../src/tools/workspace";
import { testTmpDir } from "../../support/integration-env";
import {
  eventually,
  expectIntactSession,
  messagesOf,
  modelCalled,
  runStageForSuite,
} from "../../support/run-harness";

const stage = runStageForSuite({ workersPerTest: true });

/** Writes a.txt, then edits it; turn `readTurn` reads it back (the answer quotes the read). */
function editScenario(name: string) {
  stage().llm.addScenario(name, {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "a.txt", content: "first version\n" } }] },
      { toolCalls: [{ name: "edit", arguments: { path: "a.txt", oldText: "first", newText: "second" } }] },
      { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
    ],
    after: { text: "The file says: {{lastToolResult}}" },
  });
}

test("the worker holding the workspace dies for good: another worker restores it and the run reads the edited file", async () => {
  editScenario("ws-takeover");
  // The model call of the read turn is slow the first time, so the kill lands after the edit's snapshot.
  stage().llm.addFaults([
    { kind: "slow", match: { scenario: "ws-takeover", turn: 2 }, times: 1, latencyMs: 30_000 },
  ]);
  const first = await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:ws-takeover] go", mode: "auto" }, stage().settings());
  await modelCalled(stage(), "ws-takeover", 2);
  await first.kill();
  // A second worker with its own, empty workspace root: nothing of the first worker's disk.
  const otherRoot = mkdtempSync(join(testTmpDir(), "other-workspaces-"));
  await stage().startWorker({ KEEL_WORKSPACE_ROOT: otherRoot });
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const answer = messages.at(-1);
  expect(answer?.role === "assistant" ? JSON.stringify(answer.content) : "").toContain("second version");
  expect(readFileSync(join(workspaceFor(otherRoot, ref.tenantId, ref.sessionId).dir, "a.txt"), "utf8")).toBe(
    "second version\n",
  );
}, 150_000);

test("a worker that held the workspace in an earlier run, before another worker edited it, works on the edited files, not its old copy", async () => {
  // One scenario across three runs (a turn is an assistant message): write, then edit, then read.
  stage().llm.addScenario("ws-stale-copy", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "a.txt", content: "first version\n" } }] },
      { text: "written" },
      { toolCalls: [{ name: "edit", arguments: { path: "a.txt", oldText: "first", newText: "second" } }] },
      { text: "edited" },
      { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
    ],
    after: { text: "The file says: {{lastToolResult}}" },
  });
  const ref = stage().newSession();
  const file = (root: string) => join(workspaceFor(root, ref.tenantId, ref.sessionId).dir, "a.txt");
  const runOn = async (env: Record<string, string>, text: string) => {
    const worker = await stage().startWorker(env);
    await stage().runs.deliver(ref, { text, mode: "auto" }, stage().settings());
    expect((await stage().result(ref)).status).toBe("completed");
    await worker.stop();
  };
  const otherRoot = mkdtempSync(join(testTmpDir(), "other-workspaces-"));

  await runOn({}, "[scenario:ws-stale-copy] go");
  expect(readFileSync(file(stage().workspaceRoot), "utf8")).toBe("first version\n");
  await runOn({ KEEL_WORKSPACE_ROOT: otherRoot }, "now edit it");
  expect(readFileSync(file(otherRoot), "utf8")).toBe("second version\n");
  // The first worker's disk still has its copy of the first run: it must not be picked up again.
  expect(readFileSync(file(stage().workspaceRoot), "utf8")).toBe("first version\n");
  await runOn({}, "read it");

  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const answer = messages.at(-1);
  expect(answer?.role === "assistant" ? JSON.stringify(answer.content) : "").toContain(
    "The file says: second version",
  );
  expect(readFileSync(file(stage().workspaceRoot), "utf8")).toBe("second version\n");
}, 150_000);

test("branching back to an entry before an edit brings the file back as it was", async () => {
  editScenario("ws-branch");
  await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:ws-branch] go", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");
  const file = join(workspaceFor(stage().workspaceRoot, ref.tenantId, ref.sessionId).dir, "a.txt");
  expect(readFileSync(file, "utf8")).toBe("second version\n");

  const entries = await stage().entries(ref);
  const writeResult = entries.find(
    (entry) =>
      entry.type === "message" && entry.message.role === "toolResult" && entry.message.toolName === "write",
  );
  if (!writeResult) throw new Error("no stored result of the write");
  await stage().runs.branch(ref, { entryId: writeResult.id, summarize: false, model: "local-chat" });
  expect(readFileSync(file, "utf8")).toBe("first version\n");
}, 120_000);

test("the worker holding the workspace dies while a branch restores it: the next worker restores the entry's files", async () => {
  editScenario("ws-branch-kill");
  const first = await stage().startWorker({ KEEL_FAILPOINTS: "restoreWorkspace.start" });
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:ws-branch-kill] go", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");
  const writeResult = (await stage().entries(ref)).find(
    (entry) =>
      entry.type === "message" && entry.message.role === "toolResult" && entry.message.toolName === "write",
  );
  if (!writeResult) throw new Error("no stored result of the write");
  const branching = stage().runs.branch(ref, {
    entryId: writeResult.id,
    summarize: false,
    model: "local-chat",
  });
  await first.exited();
  // Another workspace folder, so another worker queue: the restore's retry on the dead worker's
  // queue is never started, and the branch claims the workspace again.
  const otherRoot = mkdtempSync(join(testTmpDir(), "branch-workspaces-"));
  await stage().startWorker({ KEEL_WORKSPACE_ROOT: otherRoot });
  await branching;
  const file = join(workspaceFor(otherRoot, ref.tenantId, ref.sessionId).dir, "a.txt");
  expect(readFileSync(file, "utf8")).toBe("first version\n");
  // The branch's marker entry is stored once, whatever the dead worker had done.
  await expectIntactSession(stage(), ref);
}, 150_000);

test("an idle workspace is evicted from the worker's disk and restored from S3: for the next tool call of the run, and for the next run", async () => {
  stage().llm.addScenario("ws-evict", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "a.txt", content: "kept in s3\n" } }] },
      { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
      { text: "Read: {{lastToolResult}}" },
      { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
    ],
    after: { text: "Read again: {{lastToolResult}}" },
  });
  // The read's model call takes long enough for the written workspace to sit idle and go.
  stage().llm.addFaults([
    { kind: "slow", match: { scenario: "ws-evict", turn: 1 }, times: 1, latencyMs: 6_000 },
  ]);
  await stage().startWorker({ KEEL_WORKSPACE_IDLE_EVICT_SECONDS: "1" });
  const ref = stage().newSession();
  const dir = workspaceFor(stage().workspaceRoot, ref.tenantId, ref.sessionId).dir;
  const evicted = () => eventually(async () => (existsSync(dir) ? undefined : true), 20_000, "eviction");
  const lastText = async () => {
    const last = messagesOf(await stage().entries(ref)).at(-1);
    return last?.role === "assistant" && last.content[0]?.type === "text" ? last.content[0].text : "";
  };

  await stage().runs.deliver(ref, { text: "[scenario:ws-evict] go", mode: "auto" }, stage().settings());
  await eventually(async () => (existsSync(join(dir, "a.txt")) ? true : undefined));
  await evicted();
  expect((await stage().result(ref)).status).toBe("completed");
  expect(await lastText()).toBe("Read: kept in s3");

  await evicted();
  await stage().runs.deliver(ref, { text: "read it again", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");
  expect(await lastText()).toBe("Read again: kept in s3");
}, 120_000);

/**
 * Runs `scenario` on a worker that kills itself when it reaches `executeTool.afterWrite` as
 * `failpoint` says (right after a tool result is stored, before the workflow's snapshot after the
 * batch), then lets a worker with its own, empty workspace root finish the run. Returns the
 * session, the last answer's text and the second worker's workspace directory.
 */
async function crashAfterResult(scenario: string, failpoint: string) {
  const first = await stage().startWorker({ KEEL_FAILPOINTS: failpoint });
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: `[scenario:${scenario}] go`, mode: "auto" }, stage().settings());
  await first.exited();
  const otherRoot = mkdtempSync(join(testTmpDir(), "other-workspaces-"));
  await stage().startWorker({ KEEL_WORKSPACE_ROOT: otherRoot });
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const answer = messages.at(-1);
  return {
    messages,
    answer: answer?.role === "assistant" ? JSON.stringify(answer.content) : "",
    dir: workspaceFor(otherRoot, ref.tenantId, ref.sessionId).dir,
  };
}

test("the worker dies right after a write's result is stored: the next worker has the written file", async () => {
  stage().llm.addScenario("ws-crash-after-write", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "a.txt", content: "written before the crash\n" } }] },
      { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
    ],
    after: { text: "The file says: {{lastToolResult}}" },
  });
  const { messages, answer, dir } = await crashAfterResult("ws-crash-after-write", "executeTool.afterWrite");
  // The write ran once (its stored result was adopted), then the read on the second worker.
  expect(messages.filter((message) => message.role === "toolResult").map((m) => m.toolName)).toEqual([
    "write",
    "read",
  ]);
  expect(answer).toContain("written before the crash");
  expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe("written before the crash\n");
}, 150_000);

test("the worker dies after both results of a parallel batch of writes are stored: both files are restored", async () => {
  stage().llm.addScenario("ws-crash-parallel", {
    turns: [
      {
        toolCalls: [
          { name: "write", arguments: { path: "one.txt", content: "one\n" } },
          { name: "write", arguments: { path: "two.txt", content: "two\n" } },
        ],
      },
      { toolCalls: [{ name: "bash", arguments: { command: "cat one.txt two.txt" } }] },
    ],
    after: { text: "Files: {{lastToolResult}}" },
  });
  const { answer, dir } = await crashAfterResult("ws-crash-parallel", "executeTool.afterWrite@2");
  expect(answer).toContain("one\\ntwo");
  expect(readFileSync(join(dir, "one.txt"), "utf8")).toBe("one\n");
  expect(readFileSync(join(dir, "two.txt"), "utf8")).toBe("two\n");
}, 150_000);

test("a worker killed after recording a new session's directory source: the claim's retry on another worker restores those files", async () => {
  const source = mkdtempSync(join(testTmpDir(), "source-"));
  writeFileSync(join(source, "seed.txt"), "from the source\n");
  stage().llm.addScenario("source-claim", {
    turns: [{ toolCalls: [{ name: "read", arguments: { path: "seed.txt" } }] }],
    after: { text: "Read: {{lastToolResult}}" },
  });
  const first = await stage().startWorker({ KEEL_FAILPOINTS: "claimWorkspace.afterSource" });
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:source-claim] read it", mode: "auto" },
    stage().settings({ workspace: { type: "directory", path: source } }),
  );
  await first.exited();
  // The source is gone; only the snapshot the first attempt recorded holds its files. A retried
  // claim of a new session looks for it (a first attempt would not).
  rmSync(source, { recursive: true, force: true });
  await stage().startWorker({ KEEL_WORKSPACE_ROOT: mkdtempSync(join(testTmpDir(), "other-workspaces-")) });
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  expect(messages.at(-1)).toMatchObject({
    role: "assistant",
    content: [{ type: "text", text: "Read: from the source" }],
  });
});
