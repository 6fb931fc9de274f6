/**
 * One firing of a schedule: starts (or continues) the session's run with the schedule's prompt
 * and settings, then stays open until that run ends, so the schedule's overlap policy (skip,
 * buffer one, cancel the previous) sees the run as running. Cancelled by the policy
 * `cancel-previous`, it aborts the run before it closes. Started by the Temporal Schedule; with
 * every worker down it waits in Temporal and starts the run when a worker returns.
 */
import {
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  uuid4,
  workflowInfo,
} from "@temporalio/workflow";
import type { ScheduledRunActivities } from "../contracts/activities";
import { firingSessionId, type ScheduledRunInput, type ScheduledRunResult } from "./schedules";

const RETRY = { initialInterval: "1 second", maximumInterval: "30 seconds" } as const;

/** Start and abort are client calls of a few seconds (a delivery retries a busy session itself). */
const quick = proxyActivities<ScheduledRunActivities>({ startToCloseTimeout: "2 minutes", retry: RETRY });

/**
 * The wait lasts as long as the run (approvals may wait a week); its heartbeats let a dead
 * worker's wait move to another worker within seconds, and carry the cancellation.
 */
const waiting = proxyActivities<ScheduledRunActivities>({
  startToCloseTimeout: "30 days",
  heartbeatTimeout: "20 seconds",
  retry: RETRY,
});

export async function scheduledRun(input: ScheduledRunInput): Promise<ScheduledRunResult> {
  if (typeof input?.tenantId !== "string" || typeof input.text !== "string" || !input.settings) {
    throw ApplicationFailure.nonRetryable("scheduledRun needs {tenantId, scheduleId, text, settings}");
  }
  const { workflowId, firstExecutionRunId: runId } = workflowInfo();
  const sessionId =
    input.sessionId ?? firingSessionId(input, { workflowId, runId }) ?? `${input.scheduleId}-${uuid4()}`;
  // One per firing: firings within one second share a workflow id, never a run id.
  const deliveryId = `${workflowId}/${runId}`;
  const ref = { tenantId: input.tenantId, sessionId };
  try {
    // Not cancellable: a cancel that arrives mid-start must still learn whether a run started.
    const started = await CancellationScope.nonCancellable(() =>
      quick.startScheduledRun({
        ...ref,
        text: input.text,
        settings: input.settings,
        deliveryId,
        scheduleId: input.scheduleId,
      }),
    );
    const end = await waiting.awaitScheduledRun({ ...ref, runId: started.runId });
    return { sessionId, runId: started.runId, ...end };
  } catch (error) {
    if (!isCancellation(error)) throw error;
    await CancellationScope.nonCancellable(() =>
      quick.abortScheduledRun({
        ...ref,
        reason: "cancelled by the schedule (overlap policy cancel-previous)",
      }),
    );
    throw error;
  }
}
