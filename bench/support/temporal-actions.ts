/**
 * Temporal Cloud Actions (what Temporal Cloud bills) of benchmark runs, two ways:
 * - from the histories' event types, following the list in Temporal's "Temporal Cloud Actions"
 *   page (docs.temporal.io/cloud/actions): workflow started, activity started or retried (one per
 *   attempt), timer started, signal, update (update-with-start: the start and the update),
 *   search-attribute upsert, markers (local activities, and also `patched()` markers: Cloud
 *   counts the RecordMarker commands of one workflow task as one Action), child workflow (two),
 *   workflow execution options updated. Queries, activity heartbeats and rejected updates are not
 *   in histories;
 * - from the dev server's own `action` counter (its Prometheus endpoint), which sees heartbeats
 *   and queries too: Temporal names it the way to estimate Cloud Actions from a self-hosted
 *   server (docs.temporal.io/cloud/migrate/estimate-actions).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { temporal } from "@temporalio/proto";

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

/** Search attribute whose upserts Temporal Cloud does not bill (workflow versioning). */
const CHANGE_VERSION_ATTRIBUTE = "TemporalChangeVersion";

/** Billable Actions of one history by category (counts). */
export type ActionCounts = Record<string, number>;

/** The billable Actions recorded in a workflow history, by category. */
export function historyActions(events: HistoryEvent[]): ActionCounts {
  const counts: ActionCounts = {};
  const add = (category: string, count = 1) => {
    counts[category] = (counts[category] ?? 0) + count;
  };
  const markerTasks = new Set<string>();
  for (const event of events) {
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        add("workflow started");
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        // Written once, with the attempt that ended; every attempt was started (and billed).
        add(
          "activity started or retried",
          Math.max(1, event.activityTaskStartedEventAttributes?.attempt ?? 1),
        );
        break;
      case EventType.EVENT_TYPE_TIMER_STARTED:
        add("timer started");
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
        add("signal");
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        add("update");
        break;
      case EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: {
        const fields = Object.keys(
          event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {},
        );
        if (fields.some((name) => name !== CHANGE_VERSION_ATTRIBUTE)) add("search-attribute upsert");
        break;
      }
      case EventType.EVENT_TYPE_MARKER_RECORDED:
        markerTasks.add(String(event.markerRecordedEventAttributes?.workflowTaskCompletedEventId));
        break;
      case EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
        add("child workflow", 2);
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
        add("workflow options updated");
        break;
    }
  }
  if (markerTasks.size > 0) add("markers (per workflow task)", markerTasks.size);
  return counts;
}

export function sumCounts(counts: ActionCounts[]): ActionCounts {
  const total: ActionCounts = {};
  for (const one of counts) {
    for (const [key, value] of Object.entries(one)) total[key] = (total[key] ?? 0) + value;
  }
  return total;
}

export function totalOf(counts: ActionCounts): number {
  return Object.values(counts).reduce((sum, value) => sum + value, 0);
}

/**
 * How long the dev server may hold counter increments before its metrics endpoint shows them
 * (its metrics reporter flushes on an interval; a reading right after a batch missed the last
 * increments). Measured: readings taken at once missed a few; 2 s later they were complete.
 */
const METRICS_SETTLE_MS = 2_000;

/**
 * The dev server's `action` counter for `namespace`, by action type (e.g.
 * `grpc_RecordActivityTaskHeartbeat`, `command_ScheduleActivityTask`), read once the server's
 * metrics have settled; take the difference of two readings for what happened in between.
 */
export async function serverActions(metricsUrl: string, namespace: string): Promise<ActionCounts> {
  await sleep(METRICS_SETTLE_MS);
  const response = await fetch(metricsUrl);
  if (!response.ok) throw new Error(`${metricsUrl}: HTTP ${response.status}`);
  const counts: ActionCounts = {};
  for (const line of (await response.text()).split("\n")) {
    if (!line.startsWith("action{")) continue;
    const labels = line.slice("action{".length, line.lastIndexOf("}"));
    const value = Number(line.slice(line.lastIndexOf("}") + 1).trim());
    const label = (name: string) => new RegExp(`(?:^|,)${name}="([^"]*)"`).exec(labels)?.[1];
    if (label("namespace") !== namespace) continue;
    const type = label("action_type") ?? "unknown";
    counts[type] = (counts[type] ?? 0) + value;
  }
  return counts;
}

/** `after − before`, per key, leaving out keys that did not change. */
export function countsSince(before: ActionCounts, after: ActionCounts): ActionCounts {
  const delta: ActionCounts = {};
  for (const [key, value] of Object.entries(after)) {
    const change = value - (before[key] ?? 0);
    if (change !== 0) delta[key] = change;
  }
  return delta;
}
