/**
 * Activity heartbeats are billed (each that reaches the Temporal server is a Temporal Cloud
 * Action): a model call streaming for less than its heartbeat interval sends none, while a longer
 * one still heartbeats (so it stays alive and can be cancelled).
 */
import { runWorkflowId } from "../../../src/workflows/types";
import { modelCalled, runStageForSuite } from "../../support/run-harness";

jest.setTimeout(120_000);

const stage = runStageForSuite();
/** 40 words at 10 words a second: the answer streams for about 4 s. */
const LONG_TEXT = Array.from({ length: 40 }, (_, index) => `word${index}`).join(" ");

/** The pending llmTurn's last heartbeat time, once the model call has streamed for `streamedMs`. */
async function heartbeatWhileStreaming(scenario: string, heartbeatMs: number, streamedMs: number) {
  stage().llm.addScenario(scenario, { turns: [{ text: LONG_TEXT }] });
  stage().llm.addFaults([{ kind: "slow", match: { scenario }, times: 1, tokensPerSecond: 10 }]);
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: `[scenario:${scenario}] talk`, mode: "auto" },
    stage().settings({ timeouts: { heartbeatMs, toolScheduleToStartMs: 5_000 } }),
  );
  await modelCalled(stage(), scenario);
  await new Promise((done) => setTimeout(done, streamedMs));
  const description = await stage().client.workflow.getHandle(runWorkflowId(ref)).describe();
  const pending = description.raw.pendingActivities?.find(
    (activity) => activity.activityType?.name === "llmTurn",
  );
  expect(pending).toBeDefined();
  expect((await stage().result(ref)).status).toBe("completed");
  return pending?.lastHeartbeatTime ?? undefined;
}

test("a model call streaming for less than its heartbeat interval sends no heartbeat", async () => {
  // Heartbeat timeout 30 s, which the run caps at 8 s: the interval is about 2.7 s. Checked 1 s into
  // a ~4 s stream, well inside the first interval even on a loaded machine.
  expect(await heartbeatWhileStreaming("hb-quiet", 30_000, 1_000)).toBeUndefined();
});

test("a model call streaming past its heartbeat interval heartbeats", async () => {
  // Heartbeat timeout 1.5 s: interval 500 ms, checked 2.5 s into a ~4 s stream.
  expect(await heartbeatWhileStreaming("hb-long", 1_500, 2_500)).toBeDefined();
});
