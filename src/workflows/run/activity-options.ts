/**
 * Activity proxies of the run workflow: timeouts and retry policies per kind of work. Failure
 * types that must never be retried come from one shared list (core/failure-types).
 */
import { ActivityCancellationType, proxyActivities } from "@temporalio/workflow";
import type { KeelActivities } from "../../activities/types";
import { FailureType } from "../../core/failure-types";
import { LLM_RETRY } from "../../core/retry-policy";
import type { RunTimeouts } from "../types";

/** Session writes: S3 hiccups are retried for minutes; a conflicting entry fails at once. */
export const storage = proxyActivities<KeelActivities>({
  startToCloseTimeout: "1 minute",
  retry: {
    initialInterval: "1 second",
    backoffCoefficient: 2,
    maximumInterval: "30 seconds",
    maximumAttempts: 30,
    nonRetryableErrorTypes: [FailureType.entryConflict],
  },
});

/** Chat notifications are posted at most once (the activity guards it): no retries beyond that. */
export const replies = proxyActivities<KeelActivities>({
  startToCloseTimeout: "1 minute",
  retry: { maximumAttempts: 3 },
});

/**
 * Claiming the workspace takes the lock and may copy or clone a source: it heartbeats, so a
 * worker killed mid-claim costs seconds (the heartbeat timeout), not the start-to-close timeout.
 */
export const claim = proxyActivities<KeelActivities>({
  startToCloseTimeout: "10 minutes",
  heartbeatTimeout: "10 seconds",
  retry: { initialInterval: "1 second", maximumInterval: "10 seconds", maximumAttempts: 10 },
});

/** Model calls (turns, compaction): retried with backoff on rate limits, 5xx and network errors. */
export function llmActivities(timeouts: RunTimeouts) {
  return proxyActivities<KeelActivities>({
    // Fits a 15-minute Lambda worker; long generations keep the activity alive by heartbeats.
    startToCloseTimeout: "10 minutes",
    heartbeatTimeout: timeouts.heartbeatMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: LLM_RETRY.initialIntervalMs,
      backoffCoefficient: LLM_RETRY.backoffCoefficient,
      maximumInterval: LLM_RETRY.maximumIntervalMs,
      maximumAttempts: LLM_RETRY.maximumAttempts,
      nonRetryableErrorTypes: [
        FailureType.nonRetryableLlm,
        FailureType.unknownModel,
        FailureType.entryConflict,
      ],
    },
  });
}

/** Tool activities run on the worker that holds the session's workspace (its own task queue). */
export function toolActivities(taskQueue: string, timeouts: RunTimeouts) {
  return proxyActivities<KeelActivities>({
    taskQueue,
    // A dead worker leaves the task unclaimed: give up soon and move the workspace.
    scheduleToStartTimeout: timeouts.toolScheduleToStartMs,
    startToCloseTimeout: "15 minutes",
    heartbeatTimeout: timeouts.heartbeatMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: "1 second",
      backoffCoefficient: 2,
      maximumAttempts: 5,
      nonRetryableErrorTypes: [FailureType.entryConflict],
    },
  });
}

/** Workspace snapshots run on the worker holding the workspace; they heartbeat while they upload. */
export function snapshotActivities(taskQueue: string, timeouts: RunTimeouts) {
  return proxyActivities<KeelActivities>({
    taskQueue,
    scheduleToStartTimeout: timeouts.toolScheduleToStartMs,
    startToCloseTimeout: "15 minutes",
    heartbeatTimeout: timeouts.heartbeatMs,
    retry: {
      initialInterval: "1 second",
      backoffCoefficient: 2,
      maximumAttempts: 3,
      nonRetryableErrorTypes: ["WorkspaceTooLarge", "WorkspaceMissing"],
    },
  });
}
