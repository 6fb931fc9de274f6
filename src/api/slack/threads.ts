/**
 * A Slack thread is one Keel session. The session id is derived from team, channel and thread
 * timestamp (deterministic: every message of the thread finds the same session), and the thread
 * is stored beside the session so the worker knows where to post the answer.
 *
 * Objects: `{prefix}integrations/slack/{tenantId}/threads/{sessionId}.json` and, for delivered
 * events, `{prefix}integrations/slack/{tenantId}/events/{sha256(event_id)}.json`.
 */
import { z } from "zod";
import type { SessionRef } from "../../contracts/runs";
import { sha256Hex } from "../../store/digest";
import type { JsonObjects } from "../../store/json-objects";

const SlackThreadSchema = z.object({
  teamId: z.string(),
  channel: z.string(),
  threadTs: z.string(),
});
export type SlackThread = z.infer<typeof SlackThreadSchema>;

/** Hex digits of the digest kept in a session id (128 bits). */
const SESSION_ID_DIGEST_CHARS = 32;

export function slackSessionId(thread: SlackThread): string {
  const digest = sha256Hex(`${thread.teamId}\n${thread.channel}\n${thread.threadTs}`);
  return `slack-${digest.slice(0, SESSION_ID_DIGEST_CHARS)}`;
}

const threadKey = (objects: JsonObjects, ref: SessionRef) =>
  `${objects.prefix}integrations/slack/${ref.tenantId}/threads/${ref.sessionId}.json`;

const eventKey = (objects: JsonObjects, tenantId: string, eventId: string) =>
  `${objects.prefix}integrations/slack/${tenantId}/events/${sha256Hex(eventId)}.json`;

/** Records the thread of a session (first writer wins; the mapping never changes). */
export async function saveSlackThread(
  objects: JsonObjects,
  ref: SessionRef,
  thread: SlackThread,
): Promise<void> {
  await objects.createIfAbsent(threadKey(objects, ref), thread);
}

/** The Slack thread of a session, or undefined when it did not start in Slack. */
export async function readSlackThread(
  objects: JsonObjects,
  ref: SessionRef,
): Promise<SlackThread | undefined> {
  return objects.read(threadKey(objects, ref), SlackThreadSchema);
}

/** Forgets the thread of a deleted session: later plain messages in it start nothing. */
export async function forgetSlackThread(objects: JsonObjects, ref: SessionRef): Promise<void> {
  await objects.remove(threadKey(objects, ref));
}

/**
 * Marks a Slack event as handled; false when it was handled before (Slack retries events that
 * were not acknowledged in 3 s, and a replayed request carries an old event id).
 */
export async function claimSlackEvent(
  objects: JsonObjects,
  tenantId: string,
  eventId: string,
): Promise<boolean> {
  return objects.createIfAbsent(eventKey(objects, tenantId, eventId), { eventId });
}

/**
 * Delivery id of the message a Slack event delivers: the same for every retry of the event
 * (Slack retries with the same `event_id`), so the run answers a retry with the first delivery's
 * result even when the event's claim was released (the first answer was lost after Temporal took
 * the message) or lost.
 */
export function slackDeliveryId(tenantId: string, eventId: string): string {
  return `keel-slack-${sha256Hex(`${tenantId}\n${eventId}`)}`;
}

/** Forgets a claimed event whose delivery failed, so Slack's retry is handled. */
export async function releaseSlackEvent(
  objects: JsonObjects,
  tenantId: string,
  eventId: string,
): Promise<void> {
  await objects.remove(eventKey(objects, tenantId, eventId));
}
