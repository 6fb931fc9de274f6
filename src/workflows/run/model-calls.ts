/**
 * The run's model calls: the turn's call (cancellable) and compaction (never cancelled: a
 * half-written compaction is worse than a late abort).
 */
import { CancellationScope } from "@temporalio/workflow";
import type { EntrySlot, EntryWrite, LlmTurnResult } from "../../contracts/activities";
import { mcpToolsForTurn } from "../../mcp/tool-names";
import type { RunContext } from "./context";
import { cancellable, closeModelCall } from "./lifecycle";
import { emit, newSlot, releaseSlot } from "./state";
import { taskAgentsFor } from "./task-calls";

/**
 * The turn's model call, cancellable by abort and interrupt; it writes the turn's user messages
 * first. The call stays open (`ctx.modelCall`) while it has not answered: when it throws, and
 * after a context overflow that stored nothing at the slot (older activity results), until
 * `compactAfterOverflow` hands the slot back or `closeModelCall` closes it.
 */
export async function callModel(
  ctx: RunContext,
  slot: EntrySlot,
  writesFirst: EntryWrite[],
): Promise<LlmTurnResult> {
  const { run } = ctx;
  ctx.modelCall = { slot, writesFirst };
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
        ...mcpToolsForTurn(run.mcpTools),
        agents: taskAgentsFor(run.settings),
        writesFirst,
        slot,
      },
    ]),
  );
  // An overflowed call is stored at its slot with its usage; older activity results stored nothing
  // there, and that call stays open until compacted or closed.
  ctx.modelCall =
    result.errorKind === "context_overflow" && !result.overflowStored ? { slot, writesFirst: [] } : undefined;
  ctx.stream.publishLive(result.live);
  return result;
}

/**
 * After a context overflow: compacts and leaves the turn to ask the model again (once:
 * `overflowRetried`). The failed call is stored at its slot (`overflowStored`); an older activity
 * result stored nothing there, and its empty slot is handed back.
 */
export async function compactAfterOverflow(
  ctx: RunContext,
  slot: EntrySlot,
  overflowStored: boolean,
): Promise<void> {
  const { run } = ctx;
  if (!overflowStored) releaseSlot(run, slot);
  ctx.modelCall = undefined;
  run.overflowRetried = true;
  await compactNow(ctx, "overflow");
  run.needsModel = true;
}

/**
 * Closes the turn's model call that was interrupted or aborted: the user messages and the partial
 * answer are stored if the activity got that far; these writes fill whatever it did not (a stored
 * entry is kept as it is).
 */
export async function closeInterruptedCall(ctx: RunContext, slot: EntrySlot): Promise<void> {
  await closeModelCall(ctx, { stopReason: "aborted" });
  emit(ctx.run, { type: "message_end", role: "assistant", entryId: slot.id });
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
