/**
 * Steering and follow-up queues (pi's semantics): steering messages are injected at the next
 * turn boundary (after the current tool calls finish), follow-ups when the agent would
 * otherwise stop. A queue hands out one message per drain ("one-at-a-time") or everything
 * ("all"). Queues are bounded: enqueueing into a full queue is refused with a reason, never
 * dropped silently. Plain data, so a workflow can hold and serialise them.
 */

export type QueueMode = "one-at-a-time" | "all";

/** Messages a queue holds by default (a run's `queueLimit` unless its settings say otherwise). */
export const DEFAULT_QUEUE_CAPACITY = 32;

export interface MessageQueue<T> {
  items: T[];
  mode: QueueMode;
  capacity: number;
}

export type EnqueueResult<T> =
  | { ok: true; queue: MessageQueue<T>; position: number }
  | { ok: false; reason: "queue_full"; capacity: number };

export function createQueue<T>(mode: QueueMode, capacity = DEFAULT_QUEUE_CAPACITY): MessageQueue<T> {
  if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`queue capacity ${capacity} < 1`);
  return { items: [], mode, capacity };
}

/** Append `item`; refused (queue unchanged) when the queue is full. `position` is 1-based. */
export function enqueue<T>(queue: MessageQueue<T>, item: T): EnqueueResult<T> {
  if (queue.items.length >= queue.capacity)
    return { ok: false, reason: "queue_full", capacity: queue.capacity };
  const items = [...queue.items, item];
  return { ok: true, queue: { ...queue, items }, position: items.length };
}

/** Take what the mode allows: the oldest message, or all of them. */
export function drain<T>(queue: MessageQueue<T>): { taken: T[]; queue: MessageQueue<T> } {
  const count = queue.mode === "all" ? queue.items.length : Math.min(1, queue.items.length);
  return { taken: queue.items.slice(0, count), queue: { ...queue, items: queue.items.slice(count) } };
}

/** Remove everything (abort, or a caller clearing its queued messages). */
export function clearQueue<T>(queue: MessageQueue<T>): { removed: T[]; queue: MessageQueue<T> } {
  return { removed: queue.items, queue: { ...queue, items: [] } };
}

/** How a message sent to a session with a live run is delivered. */
export const LIVE_RUN_DELIVERY_MODES = ["steer", "followUp", "interrupt", "reject"] as const;
export type LiveRunDeliveryMode = (typeof LIVE_RUN_DELIVERY_MODES)[number];

/** Where a message goes when a run is busy: a queue, the interrupt path, or a refusal. */
export type DeliveryDecision =
  | { action: "start_run" }
  | { action: "enqueue"; queue: "steering" | "followUp" }
  | { action: "interrupt" }
  | { action: "refuse"; reason: "busy" };

/** The delivery decision for `mode` when a run is (or is not) active; queue bounds apply after. */
export function decideDelivery(mode: LiveRunDeliveryMode, runActive: boolean): DeliveryDecision {
  if (!runActive) return { action: "start_run" };
  switch (mode) {
    case "steer":
      return { action: "enqueue", queue: "steering" };
    case "followUp":
      return { action: "enqueue", queue: "followUp" };
    case "interrupt":
      return { action: "interrupt" };
    case "reject":
      return { action: "refuse", reason: "busy" };
  }
}
