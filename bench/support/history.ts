/**
 * Workflow histories as benchmarks see them: encoded protobuf size (what Temporal stores and
 * replays), size after N turns, and where a run's time went between activities.
 */
import type { Client } from "@temporalio/client";
import { temporal } from "@temporalio/proto";

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

export async function fetchEvents(
  client: Client,
  workflowId: string,
  runId?: string,
): Promise<HistoryEvent[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return history.events ?? [];
}

/**
 * The histories of every execution of `workflowId`, oldest first: the latest run, then each run it
 * continued from (its start event names the previous run), so a run that continued as new is
 * measured whole.
 */
export async function fetchExecutionChain(client: Client, workflowId: string): Promise<HistoryEvent[][]> {
  const chain: HistoryEvent[][] = [];
  for (let runId: string | undefined; ; ) {
    const events = await fetchEvents(client, workflowId, runId);
    chain.unshift(events);
    const previous = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
    if (!previous) return chain;
    runId = previous;
  }
}

/** Encoded protobuf size of a history made of `events`. */
export function encodedBytes(events: HistoryEvent[]): number {
  return temporal.api.history.v1.History.encode({ events }).finish().length;
}

/** Activity type name of an ActivityTaskScheduled event, else undefined. */
function scheduledType(event: HistoryEvent): string | undefined {
  return event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ? (event.activityTaskScheduledEventAttributes?.activityType?.name ?? undefined)
    : undefined;
}

/**
 * History size once `turns` turns are complete: the events before the model activity of turn
 * `turns + 1` is scheduled (the whole history when there is no such turn). A turn starts with
 * the scheduling of an activity of type `modelActivity`.
 */
export function bytesAfterTurns(events: HistoryEvent[], modelActivity: string, turns: number): number {
  let seen = 0;
  for (let index = 0; index < events.length; index++) {
    if (scheduledType(events[index]!) === modelActivity) {
      seen += 1;
      if (seen === turns + 1) return encodedBytes(events.slice(0, index));
    }
  }
  return encodedBytes(events);
}

/** Events of `type` (an EventType name without its prefix, e.g. "WORKFLOW_EXECUTION_SIGNALED"). */
export function countEventsOfType(events: HistoryEvent[], type: string): number {
  const wanted = EventType[`EVENT_TYPE_${type}` as keyof typeof EventType];
  return events.filter((event) => event.eventType === wanted).length;
}

export function countScheduled(events: HistoryEvent[], activity: string): number {
  return events.filter((event) => scheduledType(event) === activity).length;
}

function eventMs(event: HistoryEvent): number {
  const time = event.eventTime;
  if (!time) return 0;
  return Number(time.seconds ?? 0) * 1000 + (time.nanos ?? 0) / 1e6;
}

export interface ActivityTiming {
  activity: string;
  count: number;
  /** Mean scheduled → started: waiting for a worker slot / poll. */
  meanQueueMs: number;
  /** Mean started → completed: the activity's own work. */
  meanRunMs: number;
}

export interface TimeBreakdown {
  totalMs: number;
  activities: ActivityTiming[];
  /** Time with no activity scheduled or running: workflow tasks and their round trips. */
  betweenActivitiesMs: number;
  workflowTasks: number;
  events: number;
}

/** Where a run's time went, from its history's event timestamps. */
export function timeBreakdown(events: HistoryEvent[]): TimeBreakdown {
  const scheduled = new Map<string, { activity: string; at: number }>();
  const started = new Map<string, number>();
  const spans: Array<[number, number]> = [];
  const perType = new Map<string, { count: number; queue: number; run: number }>();
  let workflowTasks = 0;
  for (const event of events) {
    const id = String(event.eventId);
    const type = scheduledType(event);
    if (type) scheduled.set(id, { activity: type, at: eventMs(event) });
    if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) workflowTasks += 1;
    if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      started.set(String(event.activityTaskStartedEventAttributes?.scheduledEventId), eventMs(event));
    }
    if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const key = String(event.activityTaskCompletedEventAttributes?.scheduledEventId);
      const at = scheduled.get(key);
      const start = started.get(key);
      if (!at || start === undefined) continue;
      const end = eventMs(event);
      spans.push([at.at, end]);
      const totals = perType.get(at.activity) ?? { count: 0, queue: 0, run: 0 };
      totals.count += 1;
      totals.queue += start - at.at;
      totals.run += end - start;
      perType.set(at.activity, totals);
    }
  }
  const totalMs = events.length ? eventMs(events[events.length - 1]!) - eventMs(events[0]!) : 0;
  return {
    totalMs,
    activities: [...perType.entries()].map(([activity, totals]) => ({
      activity,
      count: totals.count,
      meanQueueMs: totals.queue / totals.count,
      meanRunMs: totals.run / totals.count,
    })),
    betweenActivitiesMs: totalMs - unionLength(spans),
    workflowTasks,
    events: events.length,
  };
}

/** Total length covered by possibly overlapping intervals. */
function unionLength(spans: Array<[number, number]>): number {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const [from, to] of sorted) {
    if (to <= end) continue;
    total += to - Math.max(from, end);
    end = to;
  }
  return total;
}

/** Encoded bytes and count of events per event type, largest first. */
export function bytesByEventType(
  events: HistoryEvent[],
): Array<{ type: string; events: number; bytes: number }> {
  const totals = new Map<string, { events: number; bytes: number }>();
  for (const event of events) {
    const type = (EventType[event.eventType ?? 0] ?? "UNKNOWN").replace("EVENT_TYPE_", "");
    const entry = totals.get(type) ?? { events: 0, bytes: 0 };
    entry.events += 1;
    entry.bytes += temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    totals.set(type, entry);
  }
  return [...totals.entries()].map(([type, total]) => ({ type, ...total })).sort((a, b) => b.bytes - a.bytes);
}

/** Several runs' breakdowns as one: totals summed, means weighted by count. */
export function mergeBreakdowns(breakdowns: TimeBreakdown[]): TimeBreakdown {
  const perType = new Map<string, { count: number; queue: number; run: number }>();
  for (const breakdown of breakdowns) {
    for (const timing of breakdown.activities) {
      const totals = perType.get(timing.activity) ?? { count: 0, queue: 0, run: 0 };
      totals.count += timing.count;
      totals.queue += timing.meanQueueMs * timing.count;
      totals.run += timing.meanRunMs * timing.count;
      perType.set(timing.activity, totals);
    }
  }
  const sum = (pick: (breakdown: TimeBreakdown) => number) =>
    breakdowns.reduce((total, breakdown) => total + pick(breakdown), 0);
  return {
    totalMs: sum((breakdown) => breakdown.totalMs),
    activities: [...perType.entries()].map(([activity, totals]) => ({
      activity,
      count: totals.count,
      meanQueueMs: totals.queue / totals.count,
      meanRunMs: totals.run / totals.count,
    })),
    betweenActivitiesMs: sum((breakdown) => breakdown.betweenActivitiesMs),
    workflowTasks: sum((breakdown) => breakdown.workflowTasks),
    events: sum((breakdown) => breakdown.events),
  };
}
