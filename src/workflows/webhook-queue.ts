/**
 * The delivery workflow's queue decisions (webhook-delivery.ts), pure: an event id is taken once
 * (the last SEEN_IDS_KEPT ids are remembered: a publish retried after its signal went through
 * sends the same event again), and events leave the queue in the order they were signalled.
 */
import type { WebhookEvent } from "../contracts/webhooks";

/** Event ids a delivery workflow remembers (and carries across continue-as-new). */
export const SEEN_IDS_KEPT = 500;

/**
 * The remembered ids with `id` added, or undefined when the event is to be dropped: seen before,
 * or not an id at all (a malformed signal).
 */
export function rememberEventId(seen: readonly string[], id: unknown): string[] | undefined {
  if (typeof id !== "string" || id.length === 0 || seen.includes(id)) return undefined;
  return [...seen, id].slice(-SEEN_IDS_KEPT);
}

/** The event to deliver next: the earliest signalled (removed from `queue`). */
export function nextWebhookEvent(queue: WebhookEvent[]): WebhookEvent | undefined {
  return queue.shift();
}
