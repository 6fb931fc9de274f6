/** Reading a session's conversation for a model call: entries up to a slot, as LLM messages. */
import { llmMessagesFor } from "../core/llm-context";
import type { Message } from "../core/messages";
import type { SessionRef } from "../core/session-ref";
import { pathToRoot } from "../core/session-tree";
import type { SessionEntry } from "../core/session-types";
import type { SessionStore } from "../store/session-store";

/** Entries stored before `beforeSeq`, in order (stops at a gap: a live run may still be writing). */
export async function entriesBefore(
  store: SessionStore,
  ref: SessionRef,
  beforeSeq: number,
): Promise<SessionEntry[]> {
  if (beforeSeq <= 0) return [];
  const { entries } = await store.readEntries(ref, { toSeq: beforeSeq - 1, untilGap: true });
  return entries.map((stored) => stored.entry);
}

/** The root→leaf path of `leafId` (empty for a null leaf). */
export function pathOf(entries: readonly SessionEntry[], leafId: string | null): SessionEntry[] {
  if (leafId === null) return [];
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  if (!byId.has(leafId)) throw new Error(`leaf ${leafId} is not among the stored entries`);
  return pathToRoot(byId, leafId);
}

/** What the model sees from `leafId` (none for a new session): core's one context builder. */
export function modelMessages(entries: readonly SessionEntry[], leafId: string | null): Message[] {
  return leafId === null ? [] : llmMessagesFor(entries, leafId).messages;
}
