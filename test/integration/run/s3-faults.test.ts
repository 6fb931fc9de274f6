/** S3 misbehaving under a run (503 SlowDown, dropped connections): retried, nothing lost. */
import { convertToLlm } from "../../../src/core/messages";
import { checkInvariants } from "../../../src/core/sanitize";
import { s3Settings } from "../../support/integration-env";
import {
  createRunStage,
  expectIntactSession,
  messagesOf,
  type RunStage,
  toolCallRunning,
} from "../../support/run-harness";
import { type S3FaultProxy, startS3FaultProxy } from "../../support/s3-fault-proxy";

let stage: RunStage;
let proxy: S3FaultProxy;

beforeAll(async () => {
  stage = await createRunStage();
  proxy = await startS3FaultProxy(s3Settings().endpoint!, 0.25);
  // The worker reaches S3 only through the proxy; the test reads S3 directly.
  await stage.startWorker({ KEEL_S3_ENDPOINT: proxy.endpoint });
});

afterAll(async () => {
  await stage?.close();
  await proxy?.close();
});

test("a quarter of S3 requests failing: the run completes and the session is whole", async () => {
  stage.llm.addScenario("s3-faults", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "a.txt", content: "alpha" } }] },
      {
        toolCalls: [
          { name: "read", arguments: { path: "a.txt" } },
          { name: "ls", arguments: {} },
        ],
      },
    ],
    after: { text: "done: {{lastToolResult}}" },
  });
  const ref = stage.newSession();
  await stage.runs.deliver(ref, { text: "[scenario:s3-faults] work", mode: "auto" }, stage.settings());
  expect((await stage.result(ref)).status).toBe("completed");
  const { entries, gaps, nextSeq } = await stage.store.readEntries(ref);
  expect(gaps).toEqual([]);
  expect(entries).toHaveLength(nextSeq);
  const messages = messagesOf(entries.map((stored) => stored.entry));
  expect(messages.map((message) => message.role)).toEqual([
    "user",
    "assistant",
    "toolResult",
    "assistant",
    "toolResult",
    "toolResult",
    "assistant",
  ]);
  expect(checkInvariants(convertToLlm(messages))).toEqual([]);
  // Faults really happened (SDK and activity retries absorbed them). A model call is repeated
  // only if its answer could not be stored at all; crash.test.ts covers answers that were stored.
  expect(proxy.faults()).toBeGreaterThan(3);
});

test("S3 unreachable for 25 s while a tool call runs: the call is retried until S3 is back, and the run completes", async () => {
  proxy.setFailureRate(0);
  stage.llm.addScenario("s3-outage-tool", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "sleep 1; echo done" } }] }],
    after: { text: "finished" },
  });
  const ref = stage.newSession();
  await stage.runs.deliver(ref, { text: "[scenario:s3-outage-tool] go", mode: "auto" }, stage.settings());
  await toolCallRunning(stage, ref);
  // The worker's S3 endpoint refuses connections: the result cannot be stored, each attempt fails
  // at once, and the outage outlasts the 15 s of backoff a tool call was once retried for.
  await proxy.goDown();
  await new Promise((resume) => setTimeout(resume, 25_000));
  await proxy.comeBack();

  expect((await stage.result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage, ref));
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
}, 150_000);
