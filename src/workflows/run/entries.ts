/**
 * Entries the workflow writes itself (user messages, and the closing entries of work cut short),
 * each at a slot it assigned. Pure: the writes go through the session-write activity, which keeps
 * whatever an activity already stored at the same slot.
 */
import type { EntrySlot, EntryWrite } from "../../contracts/activities";
import type { QueuedMessage } from "../../contracts/runs";
import { FAILED_MARKER, INTERRUPTED_MARKER } from "../../core/markers";
import type { AssistantMessage, ToolResultMessage } from "../../core/messages";
import { createMessageEntry, createModelChangeEntry } from "../../core/session-entries";
import { emptyUsage } from "../../core/usage";
import { type BatchCall, emit, newSlot, type RunRecord } from "./state";

/**
 * The user entry that opens a turn: the turn's messages (first prompt, steering, follow-ups,
 * nudges) in one entry, one text block each, so no two user messages are ever adjacent in the
 * stored session. None when the turn only answers tool results.
 */
export function userMessageWrites(run: RunRecord, messages: QueuedMessage[]): EntryWrite[] {
  const [first] = messages;
  if (!first) return [];
  const slot = newSlot(run);
  emit(run, { type: "message_start", role: "user", entryId: slot.id });
  emit(run, { type: "message_end", role: "user", entryId: slot.id });
  const content =
    messages.length === 1
      ? first.text
      : messages.map((message) => ({ type: "text" as const, text: message.text }));
  const entry = createMessageEntry(slot, { role: "user", content, timestamp: first.acceptedAt });
  return [{ seq: slot.seq, entry }];
}

/** An error result for a call that did not run to completion (refused, aborted, unfinished). */
export function syntheticToolResult(
  call: BatchCall,
  text: string,
  timestamp: number,
  isError = true,
): EntryWrite {
  const message: ToolResultMessage = {
    role: "toolResult",
    toolCallId: call.summary.id,
    toolName: call.summary.name,
    content: [{ type: "text", text }],
    isError,
    timestamp,
  };
  return { seq: call.slot.seq, entry: createMessageEntry(call.slot, message) };
}

/**
 * The assistant entry of a model call that ended without an answer: `aborted` with the
 * `[INTERRUPTED]` marker when cut short, `error` with `[FAILED]` and the failure's text when the
 * call or the run failed (so the model and a person reading the session see why). A partial
 * answer the activity stored at the same slot wins over this one.
 */
export function unansweredAssistant(
  slot: EntrySlot,
  model: string,
  outcome: { stopReason: "aborted" } | { stopReason: "error"; errorMessage: string },
  timestamp: number,
): EntryWrite {
  const message: AssistantMessage = {
    role: "assistant",
    content: [
      {
        type: "text",
        text:
          outcome.stopReason === "aborted" ? INTERRUPTED_MARKER : `${FAILED_MARKER} ${outcome.errorMessage}`,
      },
    ],
    api: "keel",
    provider: "keel",
    model,
    usage: emptyUsage(),
    stopReason: outcome.stopReason,
    errorMessage:
      outcome.stopReason === "aborted" ? "interrupted before the model answered" : outcome.errorMessage,
    timestamp,
  };
  return { seq: slot.seq, entry: createMessageEntry(slot, message) };
}

/**
 * The switch to `model` of a call closed before the model was asked (an abort while failing over):
 * the activity writes it with the model's provider once the model answered; closing without an
 * answer writes it as the run's (provider `keel`, like the unanswered answer after it).
 */
export function unaskedModelChange(slot: EntrySlot, model: string): EntryWrite {
  return { seq: slot.seq, entry: createModelChangeEntry(slot, "keel", model) };
}
