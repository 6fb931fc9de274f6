/**
 * Repair of a stored session that an earlier run left open: it died between the writes of a
 * parallel tool batch (a gap in the sequence, a later entry whose parent was never written), it was
 * stopped from outside before its tool calls reported (calls without results), or before the model
 * answered its user message (a trailing user message). Planned here as pure data; the caller
 * writes the planned entries with conditional creates, so a repair that races nothing is exact and
 * one that races a late writer keeps whichever entry landed first.
 *
 * After the repair, the stored session satisfies: every sequence number below the highest one
 * holds an entry, every parent id names an earlier entry, the leaf path's last tool calls each
 * have a result right after their assistant message, and the leaf is not a user message.
 */
import {
  FAILED_MARKER,
  FORKED_TOOL_RESULT_TEXT,
  UNANSWERED_TURN_TEXT,
  UNFINISHED_TOOL_RESULT_TEXT,
} from "./markers";
import type { AssistantMessage, ToolCallBlock, ToolResultMessage } from "./messages";
import { createCustomEntry, createMessageEntry, type EntryPlacement } from "./session-entries";
import type { SessionEntry } from "./session-types";
import { emptyUsage } from "./usage";

/** An entry at its sequence number. */
export interface SeqEntry {
  seq: number;
  entry: SessionEntry;
}

/** `customType` of the entry that fills a gap no tool result belongs in (pi ignores custom entries). */
export const GAP_ENTRY_TYPE = "keel.gap";

export interface RepairSources {
  makeId(): string;
  /** Epoch ms for the repair entries' timestamps. */
  now: number;
}

/**
 * The entries to write so that `stored` (in sequence order, possibly with gaps) is a closed,
 * well-formed session. Empty when nothing is wrong.
 */
export function planSessionRepair(stored: readonly SeqEntry[], sources: RepairSources): SeqEntry[] {
  const bySeq = new Map(stored.map((item) => [item.seq, item.entry]));
  const highest = stored.reduce((max, item) => Math.max(max, item.seq), -1);
  const knownIds = new Set(stored.map((item) => item.entry.id));
  const writes: SeqEntry[] = [];
  const place = (seq: number, id: string): EntryPlacement => ({
    id,
    parentId: seq > 0 ? (bySeq.get(seq - 1)?.id ?? null) : null,
    timestamp: new Date(sources.now).toISOString(),
  });
  const add = (seq: number, entry: SessionEntry) => {
    writes.push({ seq, entry });
    bySeq.set(seq, entry);
    knownIds.add(entry.id);
  };

  for (let seq = 0; seq < highest; seq++) {
    if (bySeq.has(seq)) continue;
    // Slots are handed out in a chain, so the next entry names the missing one as its parent.
    const nextParent = bySeq.get(seq + 1)?.parentId;
    const id = nextParent && !knownIds.has(nextParent) ? nextParent : sources.makeId();
    const call = toolCallAnsweredAt(bySeq, seq);
    add(
      seq,
      call
        ? createMessageEntry(place(seq, id), errorResult(call, UNFINISHED_TOOL_RESULT_TEXT, sources.now))
        : createCustomEntry(place(seq, id), GAP_ENTRY_TYPE, {
            reason: "no entry was stored at this position",
          }),
    );
  }

  let next = highest + 1;
  const leaf = bySeq.get(highest);
  if (!leaf) return writes;
  for (const call of unansweredCallsAtEnd(bySeq, highest)) {
    const result = errorResult(call, UNFINISHED_TOOL_RESULT_TEXT, sources.now);
    add(next, createMessageEntry(place(next, sources.makeId()), result));
    next += 1;
  }
  const last = bySeq.get(next - 1);
  if (last?.type === "message" && last.message.role === "user") {
    add(next, createMessageEntry(place(next, sources.makeId()), unansweredTurn(sources.now)));
  }
  return writes;
}

/**
 * The entries that close a forked path (root → the fork's entry, in order): when the path ends in
 * an assistant entry's tool calls (the entry itself, or it and some of its results), an error
 * result for each call without one, saying it was not run in the fork, chained below the path's
 * last entry. Empty when no call is open.
 */
export function closeForkedPath(path: readonly SessionEntry[], sources: RepairSources): SessionEntry[] {
  const bySeq = new Map(path.map((entry, index) => [index, entry]));
  const writes: SessionEntry[] = [];
  let parentId = path.at(-1)?.id ?? null;
  for (const call of unansweredCallsAtEnd(bySeq, path.length - 1)) {
    const placement = { id: sources.makeId(), parentId, timestamp: new Date(sources.now).toISOString() };
    writes.push(createMessageEntry(placement, errorResult(call, FORKED_TOOL_RESULT_TEXT, sources.now)));
    parentId = placement.id;
  }
  return writes;
}

/** The tool call whose result belongs at `seq`: the i-th call of the assistant entry i+1 slots back. */
function toolCallAnsweredAt(
  bySeq: ReadonlyMap<number, SessionEntry>,
  seq: number,
): ToolCallBlock | undefined {
  for (let back = seq - 1; back >= 0; back--) {
    const entry = bySeq.get(back);
    if (!entry) continue;
    if (entry.type !== "message") return undefined;
    if (entry.message.role === "assistant") return toolCallsIn(entry.message)[seq - back - 1];
    if (entry.message.role !== "toolResult") return undefined;
  }
  return undefined;
}

/** Calls of the last assistant entry that only tool results follow, without a result among them. */
function unansweredCallsAtEnd(bySeq: ReadonlyMap<number, SessionEntry>, highest: number): ToolCallBlock[] {
  const answered = new Set<string>();
  for (let seq = highest; seq >= 0; seq--) {
    const entry = bySeq.get(seq);
    if (entry?.type !== "message") return [];
    if (entry.message.role === "toolResult") {
      answered.add(entry.message.toolCallId);
      continue;
    }
    if (entry.message.role !== "assistant") return [];
    return toolCallsIn(entry.message).filter((call) => !answered.has(call.id));
  }
  return [];
}

function toolCallsIn(message: AssistantMessage): ToolCallBlock[] {
  return message.content.filter((block): block is ToolCallBlock => block.type === "toolCall");
}

function errorResult(call: ToolCallBlock, text: string, timestamp: number): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: "text", text }],
    isError: true,
    timestamp,
  };
}

function unansweredTurn(timestamp: number): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text: `${FAILED_MARKER} ${UNANSWERED_TURN_TEXT}` }],
    api: "keel",
    provider: "keel",
    model: "keel",
    usage: emptyUsage(),
    stopReason: "error",
    errorMessage: UNANSWERED_TURN_TEXT,
    timestamp,
  };
}
