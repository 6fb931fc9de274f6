/**
 * What a live run waits for, read from Temporal's description of its execution (its pending
 * activities and workflow task): no worker or runner is needed to answer, so this works exactly
 * when the run itself cannot say anything (its worker died, no runner is up). Pure except for
 * `describeRunWait`, which asks Temporal.
 */
import type { WorkflowHandle } from "@temporalio/client";
import { temporal } from "@temporalio/proto";
import { environmentWaitText, type RunWait } from "../contracts/waits";

type PendingActivity = temporal.api.workflow.v1.IPendingActivityInfo;
type PendingWorkflowTask = temporal.api.workflow.v1.IPendingWorkflowTaskInfo;
type Timestamp = { seconds?: unknown; nanos?: number | null } | null | undefined;

const SCHEDULED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED;
const TASK_SCHEDULED = temporal.api.enums.v1.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED;

/**
 * A started activity silent this long has likely lost its worker or runner: workers heartbeat at
 * least every 2 s (maxHeartbeatThrottleInterval), runners every second.
 */
const SILENT_AFTER_MS = 4_000;
/** A task on a worker's queue (or the run's next workflow task) not taken for this long is waited on. */
const UNTAKEN_AFTER_MS = 2_000;

/** Activities of a runner environment's queue (no worker runs them; the API hands them to runners). */
const RUNNER_ACTIVITIES = new Set(["executeToolOnRunner", "listMcpToolsOnRunner"]);
/** Activities whose silence says nothing about the run: the call they watch goes on without them. */
const IGNORED = new Set(["watchRunnerCall"]);
/** Activities that carry a tool call's live output: a lost attempt's output read later is old. */
const TOOL_ACTIVITIES = new Set(["executeTool", "executeToolOnRunner"]);
/** What a person calls each activity a run waits on. */
const WHAT: Record<string, string> = {
  executeTool: "a tool call",
  llmTurn: "the model call",
  compact: "the compaction",
  claimWorkspace: "the workspace claim",
  listMcpTools: "the MCP tool listing",
};

function millisOf(time: Timestamp): number | undefined {
  if (!time || time.seconds === undefined || time.seconds === null) return undefined;
  return Number(time.seconds) * 1000 + Math.floor((time.nanos ?? 0) / 1e6);
}

/** `keel-runner/<tenant>/<env>[/<session>]` (contracts/task-queues.ts) → `<env>`. */
function environmentOf(activity: PendingActivity): string | undefined {
  const queue = activity.activityOptions?.taskQueue?.name;
  return queue?.startsWith("keel-runner/") ? queue.split("/")[2] : undefined;
}

function activityWait(activity: PendingActivity, now: number): RunWait | undefined {
  const type = activity.activityType?.name ?? "";
  if (IGNORED.has(type)) return undefined;
  const attempt = activity.attempt ?? 1;
  const tool = TOOL_ACTIVITIES.has(type);
  const stale = (upTo: number) => (tool && upTo > 0 ? { staleUpTo: upTo } : {});
  if (RUNNER_ACTIVITIES.has(type)) {
    const environment = environmentOf(activity) ?? "?";
    const base = { type: "waiting", on: "environment", environment, attempt } as const;
    if (activity.state === SCHEDULED) {
      const since = millisOf(activity.scheduledTime) ?? now;
      return { ...base, message: environmentWaitText(environment, attempt), since, ...stale(attempt - 1) };
    }
    const reported = millisOf(activity.lastHeartbeatTime) ?? millisOf(activity.lastStartedTime);
    if (reported === undefined || now - reported < SILENT_AFTER_MS) return undefined;
    return {
      ...base,
      message: `waiting for environment \`${environment}\`: the runner running this call stopped reporting; the call goes back to the environment's queue when its heartbeat timeout passes`,
      since: reported,
      ...stale(attempt),
    };
  }
  const what = WHAT[type] ?? type;
  const base = { type: "waiting", on: "worker", attempt } as const;
  if (activity.state === SCHEDULED) {
    const since = millisOf(activity.scheduledTime) ?? now;
    if (attempt > 1)
      return {
        ...base,
        message: `waiting for a worker: ${what} is retried (attempt ${attempt}) after its worker stopped or it failed, and no worker has taken it yet`,
        since,
        ...stale(attempt - 1),
      };
    if (now - since < UNTAKEN_AFTER_MS) return undefined;
    return { ...base, message: `waiting for a worker: no worker has taken ${what} yet`, since };
  }
  // Only activities that heartbeat can be told silent (every long one of a run does).
  const reported = millisOf(activity.lastHeartbeatTime);
  if (reported === undefined || now - reported < SILENT_AFTER_MS) return undefined;
  return {
    ...base,
    message: `waiting for a worker: the worker running ${what} stopped reporting; ${what} is taken over by another worker when its heartbeat timeout passes`,
    since: reported,
    ...stale(attempt),
  };
}

function workflowTaskWait(task: PendingWorkflowTask | null | undefined, now: number): RunWait | undefined {
  if (!task || task.state !== TASK_SCHEDULED) return undefined;
  const since = millisOf(task.originalScheduledTime) ?? millisOf(task.scheduledTime);
  if (since === undefined || now - since < UNTAKEN_AFTER_MS) return undefined;
  return {
    type: "waiting",
    on: "worker",
    attempt: task.attempt ?? 1,
    message:
      "waiting for a worker: no worker has taken up the run's next step yet (when its worker stopped, another takes the run over)",
    since,
  };
}

/**
 * The wait of a run with these pending activities and workflow task at `now`, or undefined when
 * nothing it needs is missing (its work is running, or waits too briefly to mention). A runner
 * wait comes first (it needs someone to start a runner), then a lost or untaken activity, then
 * the run's own next step.
 */
export function runWaitOf(
  pending: { activities?: readonly PendingActivity[] | null; workflowTask?: PendingWorkflowTask | null },
  now: number,
): RunWait | undefined {
  const waits = (pending.activities ?? []).flatMap((activity) => activityWait(activity, now) ?? []);
  return (
    waits.find((wait) => wait.on === "environment") ?? waits[0] ?? workflowTaskWait(pending.workflowTask, now)
  );
}

/** The wait of the run `handle` names, from Temporal's description of it (see `runWaitOf`). */
export async function describeRunWait(
  handle: WorkflowHandle,
  now = Date.now(),
): Promise<RunWait | undefined> {
  const { raw } = await handle.describe();
  if (
    raw.workflowExecutionInfo?.status !==
    temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
  )
    return undefined;
  return runWaitOf({ activities: raw.pendingActivities, workflowTask: raw.pendingWorkflowTask }, now);
}
