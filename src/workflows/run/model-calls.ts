/**
 * The run's model calls: the turn's call (cancellable) and compaction (never cancelled: a
 * half-written compaction is worse than a late abort).
 */
import { CancellationScope } from "@temporalio/workflow";
import type { EntrySlot, EntryWrite, LlmTurnResult } from "../../activities/types";
import { unansweredAssistant } from "./entries";
import { cancellable, type RunContext, writeEntries } from "./lifecycle";
import { emit, newSlot, releaseSlot } from "./state";

/** The turn's model call, cancellable by abort and interrupt; it writes the turn's user messages first. */
export async function callModel(
  ctx: RunContext,
  slot: EntrySlot,
  writesFirst: EntryWrite[],
): Promise<LlmTurnResult> {
  const { run } = ctx;
  emit(run, { type: "message_start", role: "assistant", entryId: slot.id });
  const result = await cancellable(ctx, () =>
    ctx.llm.llmTurn.executeWithOptions({ summary: `llm ${run.next.model} turn ${run.turn}` }, [
      {
        ...run.ref,
        turn: run.turn,
        model: run.next.model,
        systemPrompt: run.settings.systemPrompt,
        thinkingLevel: run.next.thinkingLevel,
        tools: run.settings.tools,
        ...(run.mcpTools ? { mcpTools: run.mcpTools } : {}),
        writesFirst,
        slot,
      },
    ]),
  );
  ctx.stream.publishLive(result.live);
  return result;
}

/**
 * Closes the turn's model call that was interrupted or aborted: the user messages and the partial
 * answer are stored if the activity got that far; these writes fill whatever it did not (a stored
 * entry is kept as it is).
 */
export async function closeInterruptedCall(
  ctx: RunContext,
  slot: EntrySlot,
  writesFirst: EntryWrite[],
): Promise<void> {
  const { run } = ctx;
  await writeEntries(ctx, [
    ...writesFirst,
    unansweredAssistant(slot, run.next.model, { stopReason: "aborted" }, run.clock.now()),
  ]);
  ctx.modelCall = undefined;
  emit(run, { type: "message_end", role: "assistant", entryId: slot.id });
}

/** Compacts the context now; a compaction that found nothing to cut hands its slot back. */
export async function compactNow(ctx: RunContext, reason: "threshold" | "overflow"): Promise<void> {
  const { run } = ctx;
  emit(run, { type: "compaction_start", reason, tokensBefore: run.contextTokens });
  const slot = newSlot(run);
  const result = await CancellationScope.nonCancellable(() =>
    ctx.llm.compact.executeWithOptions({ summary: `compact ${run.next.model} (${reason})` }, [
      {
        ...run.ref,
        model: run.next.model,
        reserveTokens: run.settings.compaction.reserveTokens,
        keepRecentTokens: run.settings.compaction.keepRecentTokens,
        slot,
      },
    ]),
  );
  // Nothing was written at the slot: hand it back.
  if (!result.compacted) releaseSlot(run, slot);
  emit(run, {
    type: "compaction_end",
    tokensBefore: result.tokensBefore,
    ...(result.compacted ? { entryId: slot.id } : { error: result.reason }),
  });
}
