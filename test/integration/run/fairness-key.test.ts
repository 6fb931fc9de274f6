/**
 * Fairness between tenants: a run is started with its tenant as Temporal's fairness key, and the
 * tasks it schedules (its model calls and tool calls, on the shared queue and on the workspace
 * worker's own) set none of their own, so Temporal dispatches them under the run's key, so one tenant's burst shares each queue with the
 * others (docs/deploy.md, "Fairness between tenants"; the effect is measured by
 * bench/tenant-fairness.ts).
 */

import { runWorkflowId } from "../../../src/contracts/runs";
import { fairnessKey } from "../../../src/run-client/fairness";
import { runStageForSuite } from "../../support/run-harness";

const stage = runStageForSuite();

test("a run is started with its tenant's fairness key; the tasks it schedules inherit it", async () => {
  stage().llm.addScenario("fairness-key", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "listed" },
  });
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:fairness-key] list", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");
  const events = (await stage().client.workflow.getHandle(runWorkflowId(ref)).fetchHistory()).events ?? [];
  const started = events[0]?.workflowExecutionStartedEventAttributes;
  expect(started?.priority?.fairnessKey).toBe(fairnessKey(ref.tenantId));
  // No activity sets a key of its own (an unset key is the run's: Temporal's inheritance), on the
  // run's queue and on the workspace worker's alike.
  const scheduled = events.flatMap((event) => {
    const attributes = event.activityTaskScheduledEventAttributes;
    return attributes ? [attributes] : [];
  });
  expect(scheduled.map((attributes) => attributes.activityType?.name)).toEqual(
    expect.arrayContaining(["llmTurn", "claimWorkspace", "executeTool"]),
  );
  expect(scheduled.filter((attributes) => attributes.priority?.fairnessKey)).toEqual([]);
});

test("a tenant id longer than Temporal's 64-byte key gets a distinct hashed key", () => {
  const long = "t".repeat(80);
  expect(Buffer.byteLength(fairnessKey(long))).toBeLessThanOrEqual(64);
  expect(fairnessKey(long)).not.toBe(fairnessKey(`${long}x`));
  expect(fairnessKey("acme")).toBe("acme");
});
