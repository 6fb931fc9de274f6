/**
 * Activity heartbeats are billed (each that reaches the Temporal server is a Temporal Cloud
 * Action): a model call streaming for less than its heartbeat interval sends none, while a longer
 * one still heartbeats (so it stays alive and can be cancelled).
 */
import { runWorkflowId } from "../../../src/contracts/runs";
import { modelCalled, runStageForSuite } from "../../support/run-harness";

jest.setTimeout(120_000);

const stage = runStageForSuite();
/** 40 words at 10 words a second: the answer streams for about 4 s. */
const LONG_TEXT = Array.from({ length: 40 }, (_, index) => `word${index}`).join(" ");

/**
 * The pending llmTurn's last heartbeat, as milliseconds after its attempt started (undefined:
 * none yet), once the model call has streamed for `streamedMs`.
 */
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
  const millis = (time: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
    time ? Number(time.seconds) * 1_000 + (time.nanos ?? 0) / 1e6 : undefined;
  const heartbeat = millis(pending?.lastHeartbeatTime);
  const started = millis(pending?.lastStartedTime);
  if (heartbeat === undefined || started === undefined) return undefined;
  return heartbeat - started;
}

test("a model call streaming for less than its heartbeat interval sends no heartbeat", async () => {
  // Heartbeat timeout 30 s, which the run caps at 8 s: the interval is a third, about 2.7 s.
  // Checked 1 s into a ~4 s stream. A loaded machine may look later than that, so what is checked
  // is the property itself: no heartbeat was sent within the first interval of the attempt.
  const heartbeatAfterMs = await heartbeatWhileStreaming("hb-quiet", 30_000, 1_000);
  if (heartbeatAfterMs !== undefined) expect(heartbeatAfterMs).toBeGreaterThanOrEqual(8_000 / 3 - 50);
});

test("a model call streaming past its heartbeat interval heartbeats", async () => {
  // Heartbeat timeout 1.5 s: interval 500 ms, checked 2.5 s into a ~4 s stream.
  expect(await heartbeatWhileStreaming("hb-long", 1_500, 2_500)).toBeGreaterThanOrEqual(500 - 50);
});
