/** Reading a session's conversation for a model call: entries up to a slot, as LLM messages. */
import type { Message } from "../core/messages";
import { convertToLlm } from "../core/messages";
import { pruneOldToolOutputs, runCleanupLoop } from "../core/sanitize";
import { buildContext, pathToRoot } from "../core/session-tree";
import type { SessionEntry } from "../core/session-types";
import type { SessionStore } from "../store/session-store";
import type { SessionRef } from "../workflows/types";

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

/**
 * What the model sees from `leafId`: context built from the tree (compaction applied), converted
 * to LLM messages, sanitized (dangling tool calls closed, empty answers dropped, adjacent user
 * messages merged) and with old tool outputs pruned outside the protected recent window.
 */
export function modelMessages(entries: readonly SessionEntry[], leafId: string | null): Message[] {
  if (leafId === null) return [];
  const context = buildContext(entries, leafId);
  const cleaned = runCleanupLoop(convertToLlm(context.messages));
  return pruneOldToolOutputs(cleaned.messages).messages;
}
