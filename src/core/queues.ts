/**
 * Steering and follow-up queue semantics (pi's agent): at a drain point a queue gives either its
 * oldest message ("one-at-a-time") or everything it holds ("all"). Queues are bounded by their
 * owner; a message beyond the bound is refused with a reason, never silently dropped.
 */

export type QueueMode = "one-at-a-time" | "all";

/** Removes and returns the messages to deliver now, oldest first. */
export function drainQueue<T>(queue: T[], mode: QueueMode): T[] {
  if (queue.length === 0) return [];
  return mode === "all" ? queue.splice(0) : queue.splice(0, 1);
}

export type EnqueueResult = { accepted: true; length: number } | { accepted: false; reason: string };

/** Appends when below `limit`; otherwise refuses and leaves the queue as it was. */
export function enqueue<T>(queue: T[], item: T, limit: number): EnqueueResult {
  if (queue.length >= limit) return { accepted: false, reason: `queue is full (${limit} waiting)` };
  queue.push(item);
  return { accepted: true, length: queue.length };
}
