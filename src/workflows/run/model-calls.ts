/**
 * The run's model calls: the turn's call (cancellable) and compaction (never cancelled: a
 * half-written compaction is worse than a late abort).
 */
import { CancellationScope } from "@temporalio/workflow";
import type { EntrySlot, EntryWrite, LlmTurnResult } from "../../contracts/activities";
import { mcpToolsForTurn } from "../../mcp/tool-names";
import type { RunContext } from "./context";
import { unaskedModelChange } from "./entries";
import {
  allModelsFailedReason,
  type FailoverCause,
  failedOverWrites,
  failoverCauseOf,
  sessionModel,
  turnModels,
} from "./failover";
import { cancellable, closeModelCall } from "./lifecycle";
import { branchFrom, emit, newSlot, releaseSlot } from "./state";
import { taskAgentsFor } from "./task-calls";

/** Which model a call asks and how (failover): by default the run's next model, no failover. */
interface CallChoice {
  model: string;
  canFailOver: boolean;
  /** The slot of the `model_change` entry that records a switch to `model` (before `slot`). */
  modelChange?: EntrySlot;
}

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
  choice: CallChoice = { model: ctx.run.next.model, canFailOver: false },
): Promise<LlmTurnResult> {
  const { run } = ctx;
  const { model, canFailOver, modelChange } = choice;
  // Closed without an answer, a switched call still records its switch (the slot before `slot`).
  ctx.modelCall = modelChange
    ? { slot, writesFirst: [...writesFirst, unaskedModelChange(modelChange, model)], model }
    : { slot, writesFirst, ...(model !== run.next.model ? { model } : {}) };
  emit(run, { type: "message_start", role: "assistant", entryId: slot.id });
  const result = await cancellable(ctx, () =>
    ctx.llm.llmTurn.executeWithOptions({ summary: `llm ${model} turn ${run.turn}` }, [
      {
        ...run.ref,
        turn: run.turn,
        model,
        systemPrompt: run.settings.systemPrompt,
        thinkingLevel: run.next.thinkingLevel,
        tools: run.settings.tools,
        ...mcpToolsForTurn(run.mcpTools),
        agents: taskAgentsFor(run.settings),
        writesFirst,
        slot,
        ...(canFailOver ? { canFailOver } : {}),
        ...(modelChange ? { modelChange } : {}),
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

/** A turn's call after failover: the answer and its slot, or why every model failed. */
export type FailedOverCall =
  | { kind: "answered"; result: LlmTurnResult; slot: EntrySlot }
  | { kind: "all_failed"; reason: string };

/**
 * The turn's model call on the run's models in order (run/failover.ts): a call that fails in a way
 * retrying will not fix soon (its model's breaker open, its retries spent) goes to the next model.
 * A switch of the session's model is recorded before the answer (a `model_change` entry) and in
 * the events (`model_fallback`). An abort or interruption, or any other failure, ends the call as
 * `callModel` does; when every model failed, the run fails naming each model's error (the last
 * call is closed at its own slots).
 *
 * The next model never reuses a failed call's slots: an attempt of the failed call may still write
 * there (one cut off on its heartbeat stores its partial answer when it stops, possibly after the
 * turn moved on). The next model's entries take fresh slots on a branch beside the failed call's
 * (the same parent), and the failed call's closing entries (`failedOverWrites`) go with the next
 * call's first writes, so the session has no gap; a late write finds them, or they find it, at the
 * failed call's own slots, with its ids.
 */
export async function callModelFailingOver(
  ctx: RunContext,
  slot: EntrySlot,
  writesFirst: EntryWrite[],
): Promise<FailedOverCall> {
  const { run } = ctx;
  const models = turnModels(run);
  const failures: { model: string; cause: FailoverCause }[] = [];
  let at = slot;
  let writes = writesFirst;
  for (const [index, model] of models.entries()) {
    const from = sessionModel(run);
    const modelChange = model !== from ? at : undefined;
    const callSlot = modelChange ? newSlot(run) : at;
    try {
      // Every model of a list, the last too, gives up on a model its breaker calls down: a run
      // whose every model is down fails at once rather than after minutes of retries.
      const result = await callModel(ctx, callSlot, writes, { model, canFailOver: true, modelChange });
      if (modelChange) {
        const failed = failures.at(-1)?.cause;
        emit(run, {
          type: "model_fallback",
          from,
          to: model,
          reason: failed?.reason ?? "recovered",
          ...(failed ? { error: failed.message } : {}),
        });
      }
      run.activeModel = model;
      return { kind: "answered", result, slot: callSlot };
    } catch (error) {
      const cause = failoverCauseOf(error);
      if (cause === undefined || run.cancelling !== undefined) throw error;
      failures.push({ model, cause });
      emit(run, { type: "message_end", role: "assistant", entryId: callSlot.id });
      // Aborted while failing over, or the last model failed: the call closes unanswered at its own
      // slots (`ctx.modelCall`, as `callModel` left it); no other model is asked.
      if (run.abortReason !== undefined) {
        run.cancelling = { kind: "abort", reason: run.abortReason };
        throw error;
      }
      if (index === models.length - 1) return { kind: "all_failed", reason: allModelsFailedReason(failures) };
      writes = [
        ...writes,
        ...failedOverWrites({ modelChange, slot: callSlot, model }, cause, run.clock.now()),
      ];
      branchFrom(run, slot.parentId);
      at = newSlot(run);
    }
  }
  throw new Error("a turn with no model to call");
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
    ctx.llm.compact.executeWithOptions({ summary: `compact ${sessionModel(run)} (${reason})` }, [
      {
        ...run.ref,
        // After a failover, the model the session is on (the run's first may be down).
        model: sessionModel(run),
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
