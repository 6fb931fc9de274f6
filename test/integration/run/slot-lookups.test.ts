/**
 * S3 look-ups of an entry's slot before writing it: a first attempt of the model call and of a
 * read-only tool writes straight away (nothing can be stored there yet); a tool that changes
 * things still looks first; and a read-only tool whose result is already stored when it is
 * scheduled again elsewhere (its worker died after writing it) gets that result back, not a new one.
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { runWorkflowId } from "../../../src/contracts/runs";
import type { SessionRef } from "../../../src/core/session-ref";
import { entryKey } from "../../../src/store/session-keys";
import { s3Settings, testTmpDir } from "../../support/integration-env";
import { createRunStage, expectIntactSession, messagesOf, type RunStage } from "../../support/run-harness";
import { type S3RequestLog, startS3RequestLog } from "../../support/s3-request-log";

jest.setTimeout(150_000);

let stage: RunStage;
let log: S3RequestLog;

beforeAll(async () => {
  stage = await createRunStage();
  log = await startS3RequestLog(s3Settings().endpoint!);
});

afterEach(async () => {
  await stage?.stopWorkers();
});

afterAll(async () => {
  await stage?.close();
  await log?.close();
});

/** Methods of the requests for the entry object at `seq`, in order. */
function requestsFor(ref: SessionRef, seq: number): string[] {
  const key = entryKey(s3Settings().prefix, ref, seq);
  return log
    .requests()
    .filter((request) => request.path.endsWith(`/${key}`))
    .map((request) => request.method);
}

test("first attempts write the assistant and read-only tool slots without looking them up; a writing tool looks first", async () => {
  stage.llm.addScenario("slot-lookups", {
    turns: [
      { toolCalls: [{ name: "ls", arguments: { path: "." } }] },
      { toolCalls: [{ name: "write", arguments: { path: "a.txt", content: "alpha" } }] },
    ],
    after: { text: "done" },
  });
  await stage.startWorker({ KEEL_S3_ENDPOINT: log.endpoint });
  const ref = stage.newSession();
  await stage.runs.deliver(ref, { text: "[scenario:slot-lookups] go", mode: "auto" }, stage.settings());
  expect((await stage.result(ref)).status).toBe("completed");

  const entries = await expectIntactSession(stage, ref);
  const messages = messagesOf(entries);
  expect(messages.map((message) => message.role)).toEqual([
    "user",
    "assistant",
    "toolResult",
    "assistant",
    "toolResult",
    "assistant",
  ]);
  // Every entry of this run is a message, so entry i is stored at seq i.
  expect(entries).toHaveLength(messages.length);
  for (const assistantSeq of [1, 3, 5]) expect(requestsFor(ref, assistantSeq)[0]).toBe("PUT");
  expect(requestsFor(ref, 2)[0]).toBe("PUT"); // ls
  expect(requestsFor(ref, 4)[0]).toBe("GET"); // write
});

test("a run of a session it creates lists nothing: entries come from the worker's cache, and the first claim looks for no snapshot", async () => {
  stage.llm.addScenario("no-listings", {
    turns: [{ toolCalls: [{ name: "ls", arguments: { path: "." } }] }],
    after: { text: "done" },
  });
  await stage.startWorker({ KEEL_S3_ENDPOINT: log.endpoint });
  const ref = stage.newSession();
  await stage.runs.deliver(ref, { text: "[scenario:no-listings] go", mode: "auto" }, stage.settings());
  expect((await stage.result(ref)).status).toBe("completed");
  const sessionRequests = log.requests().filter((request) => request.path.includes(ref.sessionId));
  const sessionListings = log.requests().filter((request) => request.listPrefix?.includes(ref.sessionId));
  // Header, user message, assistant, tool result, assistant: one PUT each, nothing else.
  expect(sessionRequests.map((request) => request.method)).toEqual(["PUT", "PUT", "PUT", "PUT", "PUT"]);
  expect(sessionListings).toEqual([]);
  await expectIntactSession(stage, ref);
});

test("a read-only tool's result stored by a worker that then died: scheduled again on another worker, the stored result is kept", async () => {
  stage.llm.addScenario("slot-lookups-crash", {
    turns: [{ toolCalls: [{ name: "ls", arguments: { path: "." } }] }],
    after: { text: "Read: {{lastToolResult}}" },
  });
  const first = await stage.startWorker({ KEEL_FAILPOINTS: "executeTool.afterWrite" });
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "[scenario:slot-lookups-crash] list", mode: "auto" },
    stage.settings(),
  );
  await first.exited();
  const stored = messagesOf(await stage.entries(ref)).find((message) => message.role === "toolResult");
  expect(stored).toBeDefined();

  // A worker with its own workspace root: the retry on the dead worker's queue times out, the run
  // claims the workspace on this worker and schedules the call again (a first attempt there).
  await stage.startWorker({ KEEL_WORKSPACE_ROOT: mkdtempSync(join(testTmpDir(), "other-workspaces-")) });
  expect((await stage.result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage, ref));
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
  expect(messages[2]).toEqual(stored);
  // The call was scheduled again (on the new worker's queue), not only retried.
  const history = await stage.client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
  const toolSchedulings = (history.events ?? []).filter(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === "executeTool",
  );
  expect(toolSchedulings.length).toBeGreaterThanOrEqual(2);
});
