/**
 * Activity proxies of the run workflow: timeouts and retry policies per kind of work. Failure
 * types that must never be retried come from one shared list (core/failure-types).
 */

import {
  ActivityCancellationType,
  ActivityFailure,
  proxyActivities,
  TimeoutFailure,
  workflowInfo,
} from "@temporalio/workflow";
import type { KeelActivities, RunnerQueueActivities } from "../../contracts/activities";
import type { RunTimeouts } from "../../contracts/runs";
import { FailureType } from "../../core/failure-types";
import { LLM_RETRY } from "../../core/retry-policy";

/**
 * Upper bounds on the run's heartbeat and tool schedule-to-start timeouts (RunTimeouts; 30 s
 * each by default). They bound how long a dead worker goes unnoticed: a worker SIGKILLed while it
 * holds a run's workspace is detected by the heartbeat timeout of the activity it was running,
 * the retry waits at most the schedule-to-start timeout on its own queue before the workspace
 * moves, so a takeover costs about heartbeat + 1 s retry interval + schedule-to-start + the
 * restore (measured by bench/workspace-takeover.ts; docs/tools.md, "Takeover").
 *
 * Safe because workers send heartbeats at least every 2 s (maxHeartbeatThrottleInterval) and
 * activities heartbeat every third of the timeout, so a live activity has 5 s of slack; and a
 * live worker with a free slot starts a task on its own queue within milliseconds (a worker
 * whose slots are all busy for 3 s loses the workspace to another worker, which restores it from
 * the last snapshot: slower, still correct; the moves of one call are bounded).
 */
const HEARTBEAT_TIMEOUT_CAP_MS = 8_000;
const TOOL_SCHEDULE_TO_START_CAP_MS = 3_000;

const heartbeatTimeoutOf = (timeouts: RunTimeouts): number =>
  Math.min(timeouts.heartbeatMs, HEARTBEAT_TIMEOUT_CAP_MS);
/**
 * The cap applies to a worker's own queue only. On the run's shared queue (Lambda workers: every
 * call goes there) any worker takes the call and no dead holder is waited for, while a new Lambda
 * invocation may take seconds to start polling: the run's setting applies unchanged.
 */
const toolScheduleToStartOf = (taskQueue: string, timeouts: RunTimeouts): number =>
  taskQueue === workflowInfo().taskQueue
    ? timeouts.toolScheduleToStartMs
    : Math.min(timeouts.toolScheduleToStartMs, TOOL_SCHEDULE_TO_START_CAP_MS);

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

/**
 * Failures a model call (a turn, a compaction, a branch summary) never retries: the provider
 * refused for good, the model is not in the catalog, the entry named is not in the session, or a
 * different entry is stored at the slot.
 */
const MODEL_CALL_NON_RETRYABLE = [
  FailureType.nonRetryableLlm,
  FailureType.unknownModel,
  FailureType.unknownEntry,
  FailureType.entryConflict,
];

/**
 * Model calls (turns, compaction; the maintenance workflows' summaries too): retried with backoff
 * on rate limits, 5xx and network errors.
 */
export function llmActivities(timeouts: RunTimeouts) {
  return proxyActivities<KeelActivities>({
    // Fits a 15-minute Lambda worker; long generations keep the activity alive by heartbeats.
    startToCloseTimeout: "10 minutes",
    heartbeatTimeout: heartbeatTimeoutOf(timeouts),
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: LLM_RETRY.initialIntervalMs,
      backoffCoefficient: LLM_RETRY.backoffCoefficient,
      maximumInterval: LLM_RETRY.maximumIntervalMs,
      maximumAttempts: LLM_RETRY.maximumAttemptsWithLostWorkers,
      nonRetryableErrorTypes: MODEL_CALL_NON_RETRYABLE,
    },
  });
}

/**
 * Retries of a tool call, on a worker or a runner. A tool's own errors become error results, so a
 * failed attempt is the infrastructure's: a killed worker or runner (heartbeat timeout) or S3 out
 * of reach. Retry for as long as session writes are: an S3 outage of a minute must not end the
 * run. Retries never run a tool twice where that is unsafe (a `bash` whose start is recorded
 * answers "outcome unknown").
 */
const TOOL_CALL_RETRY = {
  initialInterval: "1 second",
  backoffCoefficient: 2,
  maximumInterval: "10 seconds",
  maximumAttempts: 30,
  nonRetryableErrorTypes: [FailureType.entryConflict],
};

/** Tool activities run on the worker that holds the session's workspace (its own task queue). */
export function toolActivities(taskQueue: string, timeouts: RunTimeouts) {
  return proxyActivities<KeelActivities>({
    taskQueue,
    // A dead worker leaves the task unclaimed: give up soon and move the workspace.
    scheduleToStartTimeout: toolScheduleToStartOf(taskQueue, timeouts),
    startToCloseTimeout: "15 minutes",
    heartbeatTimeout: heartbeatTimeoutOf(timeouts),
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: TOOL_CALL_RETRY,
  });
}

/** How long a call for a runner environment waits for a runner by default (RunTimeouts.environmentWaitMs). */
export const DEFAULT_ENVIRONMENT_WAIT_MS = 10 * 60_000;

/**
 * Tool calls and listings of a runner environment, scheduled on its task queue (`queue`, under
 * the activity id `activityId` a watcher asks about): no worker polls it; the API hands the task to
 * a runner's long poll, relays the runner's heartbeats and completes it by task token, so a dead
 * runner is detected by the same heartbeat timeout as a dead worker, and the retry goes back on the
 * queue for another runner (environments/calls.ts). A task no runner takes within the run's
 * `environmentWaitMs` times out (schedule-to-start) and the call gets an error result.
 */
export function runnerQueueActivities(queue: string, activityId: string, timeouts: RunTimeouts) {
  return proxyActivities<RunnerQueueActivities>({
    taskQueue: queue,
    activityId,
    scheduleToStartTimeout: timeouts.environmentWaitMs ?? DEFAULT_ENVIRONMENT_WAIT_MS,
    startToCloseTimeout: "15 minutes",
    heartbeatTimeout: heartbeatTimeoutOf(timeouts),
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: TOOL_CALL_RETRY,
  });
}

/** A runner environment's kind, asked once per run (a lookup in S3). */
export const environments = proxyActivities<KeelActivities>({
  startToCloseTimeout: "1 minute",
  retry: { initialInterval: "1 second", maximumInterval: "10 seconds", maximumAttempts: 10 },
});

/**
 * The watcher beside a runner environment's call (activities/runner-tool.ts): alive for as long
 * as it heartbeats; cancelled by the workflow when the call ends, without waiting for it.
 */
export function runnerWatchActivities(timeouts: RunTimeouts) {
  return proxyActivities<KeelActivities>({
    startToCloseTimeout: "1 day",
    heartbeatTimeout: heartbeatTimeoutOf(timeouts),
    cancellationType: ActivityCancellationType.TRY_CANCEL,
    retry: { initialInterval: "1 second", maximumInterval: "10 seconds", maximumAttempts: 20 },
  });
}

/**
 * Listing MCP tools runs on the worker holding the workspace (stdio servers start there). A server
 * that does not answer is reported in the result, so a failed attempt is the worker's own.
 */
export function mcpListingActivities(taskQueue: string, timeouts: RunTimeouts) {
  return proxyActivities<KeelActivities>({
    taskQueue,
    scheduleToStartTimeout: toolScheduleToStartOf(taskQueue, timeouts),
    startToCloseTimeout: "5 minutes",
    heartbeatTimeout: heartbeatTimeoutOf(timeouts),
    retry: {
      initialInterval: "1 second",
      backoffCoefficient: 2,
      maximumInterval: "10 seconds",
      maximumAttempts: 10,
    },
  });
}

/** Workspace snapshots run on the worker holding the workspace; they heartbeat while they upload. */
export function snapshotActivities(taskQueue: string, timeouts: RunTimeouts) {
  return proxyActivities<KeelActivities>({
    taskQueue,
    scheduleToStartTimeout: toolScheduleToStartOf(taskQueue, timeouts),
    startToCloseTimeout: "15 minutes",
    heartbeatTimeout: heartbeatTimeoutOf(timeouts),
    retry: {
      initialInterval: "1 second",
      backoffCoefficient: 2,
      maximumAttempts: 3,
      nonRetryableErrorTypes: [FailureType.workspaceTooLarge, FailureType.workspaceMissing],
    },
  });
}

/** Times an activity of the workspace's worker follows the workspace to a new worker before it fails. */
export const MAX_WORKSPACE_MOVES = 3;

/** An activity of the workspace's worker that no worker started in time: the workspace moves. */
export function isScheduleToStartTimeout(error: unknown): boolean {
  return (
    error instanceof ActivityFailure &&
    error.cause instanceof TimeoutFailure &&
    error.cause.timeoutType === "SCHEDULE_TO_START"
  );
}
