/**
 * Deterministic tool-call id normalisation, so a conversation can move between providers.
 *
 * Canonical ids are whatever the producing provider returned. OpenAI Responses ids are stored
 * as `<call_id>|<item id>` (the pi convention). Each converter maps every id through the same
 * pure function for the assistant's tool call and for the matching tool result, so the pair
 * stays linked without any lookup table.
 */
import { createHash } from "node:crypto";
import type { AssistantMessage } from "../core/messages";

/** Anthropic: `^[a-zA-Z0-9_-]+$`, at most 64 characters. */
export const ANTHROPIC_TOOL_ID_MAX = 64;
/** OpenAI Chat Completions rejects tool-call ids longer than 40 characters. */
export const CHAT_TOOL_ID_MAX = 40;
/** OpenAI Responses call ids and item ids: at most 64 characters. */
const RESPONSES_ID_MAX = 64;
const HASH_CHARS = 12;
const UNSAFE_ID_CHARS = /[^a-zA-Z0-9_-]/g;

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, HASH_CHARS);
}

/**
 * `id` unchanged when it is already safe and short enough; otherwise its safe characters
 * (truncated) plus a hash of the original, so two different ids never collapse into one.
 */
function toSafeId(id: string, maxLength: number): string {
  const sanitized = id.replace(UNSAFE_ID_CHARS, "_");
  if (sanitized === id && id.length > 0 && id.length <= maxLength) return id;
  const head = sanitized.slice(0, maxLength - HASH_CHARS - 1);
  return head ? `${head}_${shortHash(id)}` : shortHash(id);
}

/** Splits a canonical id into its Responses call id and item id (the latter may be absent). */
function splitResponsesId(id: string): { callId: string; itemId?: string } {
  const separator = id.indexOf("|");
  if (separator < 0) return { callId: id };
  return { callId: id.slice(0, separator), itemId: id.slice(separator + 1) };
}

/** The canonical id of a Responses function call: `<call_id>|<item id>`, or the call id alone. */
export function joinResponsesId(callId: string, itemId: string | undefined): string {
  return itemId ? `${callId}|${itemId}` : callId;
}

export function toAnthropicToolId(id: string): string {
  return toSafeId(id, ANTHROPIC_TOOL_ID_MAX);
}

/** Chat Completions ids: the Responses call id part when present (it is unique on its own). */
export function toChatToolId(id: string): string {
  return toSafeId(splitResponsesId(id).callId, CHAT_TOOL_ID_MAX);
}

/**
 * Responses ids. Ids from the Responses API keep their item id; foreign ids get a call id
 * derived from them and an item id `fc_<hash>` (item ids must start with `fc_`).
 */
export function toResponsesToolIds(id: string): { callId: string; itemId: string } {
  const { callId, itemId } = splitResponsesId(id);
  const safeCallId = toSafeId(callId, RESPONSES_ID_MAX);
  if (itemId?.startsWith("fc_")) return { callId: safeCallId, itemId: toSafeId(itemId, RESPONSES_ID_MAX) };
  return { callId: safeCallId, itemId: `fc_${shortHash(id)}` };
}

/**
 * `message` with every tool-call id that is already in `taken` (or repeats inside the message)
 * replaced by a fresh one, so ids stay unique keys within a conversation: history sanitation
 * pairs calls with results by id, and some OpenAI-compatible servers send `call_0` on every
 * turn. A new id is the old call id plus `_k` and a hash of `salt` (the entry's id), the
 * call's position and a counter — deterministic for the same inputs (both parts of a Responses
 * id get it). Returns `message` itself when nothing repeats.
 */
export function withUniqueToolCallIds(
  message: AssistantMessage,
  taken: ReadonlySet<string>,
  salt: string,
): AssistantMessage {
  const used = new Set(taken);
  let changed = false;
  const content = message.content.map((block, index) => {
    if (block.type !== "toolCall") return block;
    let id = block.id;
    for (let attempt = 0; used.has(id); attempt++) {
      const suffix = `_k${shortHash(`${salt}:${index}:${attempt}`).slice(0, 8)}`;
      const { callId, itemId } = splitResponsesId(block.id);
      id = joinResponsesId(`${callId}${suffix}`, itemId && `${itemId}${suffix}`);
    }
    used.add(id);
    if (id === block.id) return block;
    changed = true;
    return { ...block, id };
  });
  return changed ? { ...message, content } : message;
}
