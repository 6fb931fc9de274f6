/**
 * A worker process dies (SIGKILL) at the worst moments; a new worker finishes the run. The session
 * must end with no duplicate or missing entries, and no model call may be paid for twice when its
 * answer was already stored.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { temporal } from "@temporalio/proto";
import { runWorkflowId } from "../../../src/contracts/runs";
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import { LLM_RETRY } from "../../../src/core/retry-policy";
import { workspaceFor } from "../../../src/tools/workspace";
import { eventually, expectIntactSession, messagesOf, runStageForSuite } from "../../support/run-harness";

// Each test starts its workers (and kills some): the stage starts none.
const stage = runStageForSuite({ workersPerTest: true });

function callsFor(scenario: string, turn: number) {
  return stage()
    .llm.journal()
    .filter((entry) => entry.scenario === scenario && entry.turn === turn);
}

test("killed during a model call: the new worker makes the call again and the run completes", async () => {
  stage().llm.addScenario("crash-llm", { turns: [], after: { text: "You said: {{lastUser}}" } });
  stage().llm.addFaults([
    { kind: "slow", match: { scenario: "crash-llm", turn: 0 }, times: 1, latencyMs: 20_000 },
  ]);
  const first = await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:crash-llm] hello", mode: "auto" }, stage().settings());
  await eventually(async () => (callsFor("crash-llm", 0).length === 1 ? true : undefined));
  await first.kill();
  const second = await stage().startWorker();
  expect((await stage().result(ref)).status).toBe("completed");
  const entries = await expectIntactSession(stage(), ref);
  expect(messagesOf(entries).map((message) => message.role)).toEqual(["user", "assistant"]);
  // The first call never produced a stored answer, so the second is the one that counts.
  expect(callsFor("crash-llm", 0)).toHaveLength(2);
  // The lost worker's attempt ended by heartbeat timeout and counts as an attempt: the policy
  // leaves room for many such losses beyond the attempts a provider error gets.
  const events = (await stage().client.workflow.getHandle(runWorkflowId(ref)).fetchHistory()).events ?? [];
  const scheduled = events.find(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === "llmTurn",
  );
  expect(scheduled?.activityTaskScheduledEventAttributes?.retryPolicy?.maximumAttempts).toBe(
    LLM_RETRY.maximumAttemptsWithLostWorkers,
  );
  const started = events.find((event) => event.activityTaskStartedEventAttributes?.attempt === 2);
  expect(started?.activityTaskStartedEventAttributes?.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(
    temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT,
  );
  await second.stop();
});

test("killed right after the answer was stored: the retry adopts it without calling the model again", async () => {
  stage().llm.addScenario("crash-after-write", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "listed" },
  });
  const first = await stage().startWorker({ KEEL_FAILPOINTS: "llmTurn.afterWrite" });
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:crash-after-write] list files", mode: "auto" },
    stage().settings(),
  );
  await first.exited();
  const second = await stage().startWorker();
  expect((await stage().result(ref)).status).toBe("completed");
  const entries = await expectIntactSession(stage(), ref);
  expect(messagesOf(entries).map((message) => message.role)).toEqual([
    "user",
    "assistant",
    "toolResult",
    "assistant",
  ]);
  expect(callsFor("crash-after-write", 0)).toHaveLength(1);
  expect(callsFor("crash-after-write", 1)).toHaveLength(1);
  await second.stop();
});

test("killed during a bash command: it is not run again, the model is told the outcome is unknown", async () => {
  stage().llm.addScenario("crash-bash", {
    turns: [
      {
        toolCalls: [
          {
            name: "bash",
            arguments: { command: "echo started >> runs.log; sleep 3; echo finished >> runs.log" },
          },
        ],
      },
    ],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const first = await stage().startWorker();
  const ref = stage().newSession();
  const log = join(workspaceFor(stage().workspaceRoot, ref.tenantId, ref.sessionId).dir, "runs.log");
  await stage().runs.deliver(ref, { text: "[scenario:crash-bash] build", mode: "auto" }, stage().settings());
  await eventually(async () => (readFileSafe(log).includes("started") ? true : undefined));
  await first.kill();
  const second = await stage().startWorker();
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const result = messages.find((message) => message.role === "toolResult");
  expect(result).toMatchObject({ isError: true, content: [{ type: "text", text: UNKNOWN_OUTCOME_TEXT }] });
  // Started once (by the dead worker's command, which may still finish on its own), never twice.
  expect(readFileSafe(log).match(/started/g)).toHaveLength(1);
  await second.stop();
});

test("killed right after a tool result was stored: the result is adopted, the tool is not re-run", async () => {
  stage().llm.addScenario("crash-after-tool", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo ran >> count.log" } }] }],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const first = await stage().startWorker({ KEEL_FAILPOINTS: "executeTool.afterWrite" });
  const ref = stage().newSession();
  const log = join(workspaceFor(stage().workspaceRoot, ref.tenantId, ref.sessionId).dir, "count.log");
  await stage().runs.deliver(
    ref,
    { text: "[scenario:crash-after-tool] count", mode: "auto" },
    stage().settings(),
  );
  await first.exited();
  const second = await stage().startWorker();
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
  expect(messages[2]).toMatchObject({ isError: false });
  expect(readFileSafe(log)).toBe("ran\n");
  await second.stop();
});

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}
