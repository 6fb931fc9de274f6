/**
 * The run workflow: one execution is one agent run on one session (prompt → turns → end).
 *
 * Temporal holds control flow, S3 holds data: this code assigns entry slots (sequence number,
 * id, parent), decides what happens next and keeps small counters. Every effect is an activity
 * that reads the conversation from the session store and writes its entry at the slot it was
 * given, so a retried activity adopts what an earlier attempt stored. The pieces live in `run/`:
 * state, decisions, handlers, tool calls, entries, lifecycle and activity options.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  workflowInfo,
} from "@temporalio/workflow";
import type { LlmTurnResult } from "../contracts/activities";
import { type RunInput, type RunResult, sessionCwd, startedStatus } from "../contracts/runs";
import { FailureType } from "../core/failure-types";
import { EMPTY_RESPONSE_NUDGE, INTERRUPTED_TOOL_RESULT_TEXT } from "../core/markers";
import { hooksNamed } from "./hooks";
import { PATCHES, takesPatch } from "./patches";
import { llmActivities, storage } from "./run/activity-options";
import { budgetReached } from "./run/budget";
import type { RunContext } from "./run/context";
import {
  compactionDue,
  decideAfterModel,
  decideAfterTurn,
  decideTurnStart,
  takeTurnInputs,
} from "./run/decide";
import { userMessageWrites } from "./run/entries";
import { describeFailure, runErrorOf } from "./run/failures";
import { registerHandlers } from "./run/handlers";
import {
  abortRun,
  closeOpenCalls,
  failRun,
  finish,
  publishDetails,
  setRunAttributes,
  setStatus,
  stoppedBy,
  writeEntries,
} from "./run/lifecycle";
import { listMcpServers } from "./run/mcp";
import {
  callModel,
  callModelFailingOver,
  closeInterruptedCall,
  compactAfterOverflow,
  compactNow,
} from "./run/model-calls";
import { pauseAtBudget } from "./run/pause";
import { createRunRecord, emit, newSlot, pushPending, queuedCount, recordModelUsage } from "./run/state";
import { openRunStream } from "./run/stream";
import { runTools } from "./run/tool-calls";
import { carry } from "./run/views";
import { webhookPublisher } from "./run/webhooks";
import { runAttributes } from "./search-attributes";

export async function agentRun(input: RunInput): Promise<RunResult> {
  const run = createRunRecord(input, { now: Date.now, random: Math.random });
  const stream = openRunStream(run, input.carried?.stream);
  run.publish = stream.publish;
  const ctx: RunContext = {
    run,
    hooks: hooksNamed(input.settings.hooks ?? []),
    llm: llmActivities(input.settings.timeouts),
    stream,
    runVersion: input.runVersion ?? 0,
    depth: input.parent ? (input.parent.depth ?? 1) : 0,
    ...(input.parent ? { subAgent: true, forkedAt: input.parent.forkedAt } : {}),
  };
  setRunAttributes(
    ctx,
    runAttributes(input, run.status === "starting" ? startedStatus(ctx.runVersion) : run.status),
  );
  const publishWebhook = webhookPublisher(ctx);
  run.publish = (event) => {
    stream.publish(event);
    publishWebhook(event);
  };
  registerHandlers(ctx);

  await condition(() => queuedCount(run) > 0 || run.needsModel || run.abortReason !== undefined);
  try {
    if (run.abortReason !== undefined && !run.cursor) return await finish(ctx, "aborted", run.abortReason);
    if (!run.cursor) {
      const { created, webhookEvents, ...cursor } = await storage.openSession({
        ...run.ref,
        cwd: sessionCwd(run.ref),
        ...(input.parent ? { parentSession: input.parent.sessionId } : {}),
      });
      run.cursor = cursor;
      if (webhookEvents && !ctx.subAgent) run.webhookEvents = webhookEvents;
      ctx.unclaimedNewSession = created === true;
    }
    if (!input.carried) emit(run, { type: "agent_start", runId: workflowInfo().runId });
    setStatus(ctx, "running");
    await listMcpServers(ctx);
    return await runTurns(ctx, input);
  } catch (error) {
    // An activity failed for good (retries exhausted, non-retryable, timed out): the run ends as
    // failed, with its session closed. Anything else is a bug in this code: Temporal retries the
    // workflow task, so a fixed worker can carry on.
    if (!(error instanceof ActivityFailure)) throw error;
    run.error = runErrorOf(error);
    return failRun(ctx, describeFailure(error));
  }
}

/** The turn loop: runs until the run completes, is aborted, fails or continues as new. */
async function runTurns(ctx: RunContext, input: RunInput): Promise<RunResult> {
  const { run } = ctx;
  for (;;) {
    const start = decideTurnStart(run, workflowInfo().continueAsNewSuggested);
    if (start.kind === "abort") return abortRun(ctx);
    if (start.kind === "idle") {
      await condition(allHandlersFinished);
      if (queuedCount(run) === 0 && run.abortReason === undefined) {
        return finish(ctx, "completed", run.lastAssistantText ? "the agent finished" : "nothing to do");
      }
      continue;
    }
    if (start.kind === "finish") return finish(ctx, "completed", start.reason, { cutShort: true });
    if (start.kind === "continue_as_new") {
      await ctx.webhooksPublished;
      ctx.stream.detach();
      await condition(allHandlersFinished);
      // What was handed over is in the carried state now (queues, deliveries): not sent again.
      const { handedOver: _handedOver, ...next } = input;
      return continueAsNew<typeof agentRun>({
        ...next,
        // The run's own settings: a `budget` signal may have changed its limits.
        settings: run.settings,
        carried: { ...carry(run), stream: ctx.stream.carried() },
      });
    }

    const reached = budgetReached(run);
    if (reached && !ctx.subAgent && takesPatch(PATCHES.budgetPause, ctx.runVersion)) {
      const paused = await pauseAtBudget(ctx, reached);
      if (paused.kind === "aborted") return abortRun(ctx);
      if (paused.kind === "timed_out") return finish(ctx, "completed", paused.reason);
      continue;
    }

    // A retry after compacting for an overflow continues the same turn.
    if (!run.overflowRetried) {
      run.turn += 1;
      emit(run, { type: "turn_start", turn: run.turn });
    }
    run.failedToolCalls = 0;
    publishDetails(ctx);
    const writesFirst = userMessageWrites(run, takeTurnInputs(run, start.source));
    if (compactionDue(run)) {
      await writeEntries(ctx, writesFirst.splice(0));
      await compactNow(ctx, "threshold");
    }

    let slot = newSlot(run);
    let result: LlmTurnResult;
    try {
      // Only a run with fallback models can fail over (and records the patch's marker).
      if (run.settings.fallbackModels?.length && takesPatch(PATCHES.providerFailover, ctx.runVersion)) {
        const called = await callModelFailingOver(ctx, slot, writesFirst);
        if (called.kind === "all_failed") {
          run.error = { type: FailureType.retryableLlm, message: called.reason };
          return await failRun(ctx, called.reason);
        }
        ({ result, slot } = called);
      } else {
        result = await callModel(ctx, slot, writesFirst);
      }
    } catch (error) {
      const why = stoppedBy(run, error);
      // A call that failed over closes at the slot of its last model.
      await closeInterruptedCall(ctx, ctx.modelCall?.slot ?? slot);
      if (why === "abort") return abortRun(ctx);
      run.needsModel = false;
      continue;
    }
    recordModelUsage(run, result.usage);
    // The tenant's budget as of this call: results recorded before tenant budgets paused runs have none.
    if (result.tenantBudget === undefined) run.tenantBudget = undefined;
    else if (takesPatch(PATCHES.tenantBudgetPause, ctx.runVersion)) run.tenantBudget = result.tenantBudget;
    run.contextTokens = result.contextTokens;
    run.contextWindow = result.contextWindow;
    run.lastAssistantText = result.textPreview || run.lastAssistantText;
    emit(run, { type: "message_end", role: "assistant", entryId: slot.id });

    const after = decideAfterModel(run, result);
    if (after.kind === "compact_and_retry") {
      // Compact and ask again once (the same turn).
      await compactAfterOverflow(ctx, slot, result.overflowStored === true);
      continue;
    }
    run.overflowRetried = false;
    if (after.kind === "fail") return failRun(ctx, after.reason);
    if (after.kind === "nudge") {
      run.emptyResponses += 1;
      pushPending(run, [{ text: EMPTY_RESPONSE_NUDGE, acceptedAt: run.clock.now(), fromRun: true }]);
      emit(run, { type: "turn_end", turn: run.turn, stopReason: result.stopReason });
      continue;
    }
    run.emptyResponses = 0;

    if (after.kind === "run_tools") {
      try {
        await runTools(ctx, result.toolCalls, slot.seq);
      } catch (error) {
        if (stoppedBy(run, error) === "abort") return abortRun(ctx);
        await closeOpenCalls(ctx, INTERRUPTED_TOOL_RESULT_TEXT, "cancelled");
      }
      if (run.abortReason !== undefined) return abortRun(ctx);
      run.needsModel = true;
    } else {
      run.needsModel = false;
    }
    emit(run, { type: "turn_end", turn: run.turn, stopReason: result.stopReason });

    const next = decideAfterTurn(run, ctx.hooks, {
      turn: run.turn,
      stopReason: result.stopReason,
      text: result.textPreview,
      toolCalls: result.toolCalls,
      failedToolCalls: run.failedToolCalls,
    });
    if (next.kind === "finish") return finish(ctx, "completed", next.reason, { cutShort: true });
    if (
      next.kind === "budget_reached" &&
      (ctx.subAgent || !takesPatch(PATCHES.budgetPause, ctx.runVersion))
    ) {
      return finish(ctx, "completed", next.reason, { cutShort: true });
    }
    run.next = next.next;
  }
}
