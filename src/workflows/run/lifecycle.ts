/**
 * How a run shows itself and how it ends: status and current details for the Temporal UI,
 * cancellable in-flight work, session writes that cannot be cancelled, and the three endings
 * (completed, aborted, failed), each of which leaves the stored session closed: every tool call
 * answered, the model's last turn recorded, the `agent_end` event emitted.
 */
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  log,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from "@temporalio/workflow";
import type { AppendEntriesResult, EntryWrite } from "../../contracts/activities";
import type { RunInput, RunResult, RunStatus } from "../../contracts/runs";
import { ABORTED_TOOL_RESULT_TEXT, UNFINISHED_TOOL_RESULT_TEXT } from "../../core/markers";
import type { ToolCallState } from "../../core/tool-registry";
import { PATCHES, takesPatch } from "../patches";
import { type RunAttributePair, RunStatusAttribute } from "../search-attributes";
import { replies, storage } from "./activity-options";
import type { RunContext } from "./context";
import { syntheticToolResult, unansweredAssistant } from "./entries";
import { type BatchCall, emit, moveCall, openCalls, type RunRecord, takeAllQueued } from "./state";

const PREVIEW_CHARS = 200;

/**
 * The run's current details in the Temporal UI: its status first (an ended run's Temporal status
 * is Completed whatever its outcome, so the outcome and why are stated here), then its progress.
 */
export function publishDetails({ run }: RunContext): void {
  const cost = run.usage.cost.total.toFixed(4);
  const last = run.lastAssistantText ? `\n\n${run.lastAssistantText.slice(0, PREVIEW_CHARS)}` : "";
  const unsandboxed = run.unsandboxed ? " · ⚠ tools run without a sandbox" : "";
  const said = run.ended ? run.endReason : run.pause?.message;
  const why = said ? ` (${said.replace(/\s+/g, " ").slice(0, PREVIEW_CHARS)})` : "";
  setCurrentDetails(
    `**${run.status}**${why} · turn ${run.turn} · ${run.toolCallCount} tool calls · ${run.usage.totalTokens} tokens · $${cost}${unsandboxed}${last}`,
  );
}

export function setStatus(ctx: RunContext, status: RunStatus): void {
  ctx.run.status = status;
  setRunAttributes(ctx, [{ key: RunStatusAttribute, value: status }]);
  publishDetails(ctx);
}

/**
 * Sets the run's search attributes. Each upsert is a command, a history event and a billed
 * Action, so a run of version 1 or later (started with its attributes set) sends only the values
 * that differ from the run's; an older run sends every pair, as its recorded history expects.
 */
export function setRunAttributes(ctx: Pick<RunContext, "runVersion">, pairs: RunAttributePair[]): void {
  const current = workflowInfo().typedSearchAttributes;
  const changed = ctx.runVersion >= 1 ? pairs.filter((pair) => current.get(pair.key) !== pair.value) : pairs;
  if (changed.length > 0) upsertSearchAttributes(changed);
}

/**
 * Runs in-flight work in a scope that abort and interrupt can cancel. An abort that arrived
 * while nothing was in flight cancels the work before it starts.
 */
export async function cancellable<T>(ctx: RunContext, work: () => Promise<T>): Promise<T> {
  const scope = new CancellationScope();
  ctx.inFlight = scope;
  const { run } = ctx;
  if (run.abortReason !== undefined && !run.cancelling) {
    run.cancelling = { kind: "abort", reason: run.abortReason };
    scope.cancel();
  }
  try {
    return await scope.run(work);
  } finally {
    ctx.inFlight = undefined;
  }
}

/**
 * Why in-flight work that threw was stopped: the run cancelled it for an abort or an interrupt
 * (the work may then end cancelled, timed out or failed, its worker gone: all mean the same here),
 * which is taken and returned. Any other failure is the work's own, and is rethrown.
 */
export function stoppedBy(run: RunRecord, error: unknown): "abort" | "interrupt" {
  const why = run.cancelling;
  if (!why) throw error;
  run.cancelling = undefined;
  return why.kind;
}

/**
 * Closes the model call under way (`ctx.modelCall`), if any, as `answer` says: its user messages
 * and an unanswered assistant entry at its slot (what the activity stored first is kept). The one
 * place a call that did not answer is closed, for a failure and an interruption alike.
 */
export async function closeModelCall(
  ctx: RunContext,
  answer: Parameters<typeof unansweredAssistant>[2],
): Promise<void> {
  const call = ctx.modelCall;
  if (!call) return;
  const { run } = ctx;
  await writeEntries(ctx, [
    ...call.writesFirst,
    unansweredAssistant(call.slot, call.model ?? run.next.model, answer, run.clock.now()),
  ]);
  ctx.modelCall = undefined;
}

/** Writes entries in a scope that cannot be cancelled: closing a session must finish. */
export async function writeEntries(ctx: RunContext, writes: EntryWrite[]): Promise<AppendEntriesResult> {
  if (writes.length === 0) return { written: 0, adopted: 0, adoptedSeqs: [] };
  return CancellationScope.nonCancellable(() => storage.appendEntries({ ...ctx.run.ref, writes }));
}

export function endCall(ctx: RunContext, call: BatchCall, state: ToolCallState, isError: boolean): void {
  const { run } = ctx;
  moveCall(run, call.summary.id, state);
  if (isError) run.failedToolCalls += 1;
  emit(run, {
    type: "tool_execution_end",
    toolCallId: call.summary.id,
    toolName: call.summary.name,
    state,
    isError,
  });
}

/**
 * Closes every open tool call with a synthetic error result. A result the tool stored first is
 * kept, and the event says what is stored: `completed` for a kept success; for a kept error (a
 * command the abort cut off) `state` with `isError`, as for the synthetic result.
 */
export async function closeOpenCalls(ctx: RunContext, text: string, state: ToolCallState): Promise<void> {
  const open = openCalls(ctx.run);
  const { adoptedSeqs = [], adoptedErrorSeqs = [] } = await writeEntries(
    ctx,
    open.map((call) => syntheticToolResult(call, text, ctx.run.clock.now())),
  );
  for (const call of open) {
    const keptSuccess = adoptedSeqs.includes(call.slot.seq) && !adoptedErrorSeqs.includes(call.slot.seq);
    endCall(ctx, call, keptSuccess ? "completed" : state, !keptSuccess);
  }
}

/**
 * Ends the run: no message is accepted from here on; a chat thread gets the answer. `cutShort`: a
 * limit or a hook stopped the run before the model was done (a sub-agent's parent is told).
 */
export async function finish(
  ctx: RunContext,
  final: RunResult["status"],
  reason: string,
  { cutShort = false } = {},
): Promise<RunResult> {
  const { run } = ctx;
  run.endReason = reason;
  run.ended = true;
  // Messages the run accepted but never read are handed back, never dropped silently.
  const unprocessed = takeAllQueued(run);
  setStatus(ctx, final);
  emit(run, {
    type: "agent_end",
    status: final,
    reason,
    usage: run.usage,
    ...(unprocessed.length > 0 ? { unprocessed: unprocessed.map((message) => message.text) } : {}),
  });
  if (run.settings.chatReply) {
    const target = run.settings.chatReply;
    try {
      await CancellationScope.nonCancellable(() =>
        replies.postChatReply({ ...run.ref, target, runId: workflowInfo().runId, status: final, reason }),
      );
    } catch (error) {
      // The session and the run's outcome stand; only the notification was lost.
      log.warn("posting the run's answer to chat failed", { error: String(error) });
    }
  }
  // Webhook events go to their publisher before the run closes (nothing to wait for without any).
  await ctx.webhooksPublished;
  // Subscribers get the last items (`agent_end`) before the execution closes: an update still
  // running when it closes fails, and its items would be lost. No handler of the run's own
  // awaits, so waiting for handlers adds no wait (and no command) to older histories.
  if (takesPatch(PATCHES.runStreamDrain, ctx.runVersion)) await ctx.stream.drain();
  ctx.stream.detach();
  await condition(allHandlersFinished);
  if (run.late.length > 0) {
    // Messages that arrived after the end start the next run; the branch is new with signals, so
    // no earlier history takes it.
    return continueAsNew<(input: RunInput) => Promise<RunResult>>({
      ...run.ref,
      settings: run.settings,
      handedOver: { messages: run.late, deliveries: run.recentDeliveries },
      ...(ctx.runVersion > 0 ? { runVersion: ctx.runVersion } : {}),
    });
  }
  return {
    status: final,
    reason,
    turns: run.turn,
    ...(run.subAgentTurns > 0 ? { subAgentTurns: run.subAgentTurns } : {}),
    usage: run.usage,
    leafId: run.cursor?.leafId ?? null,
    nextSeq: run.cursor?.nextSeq ?? 0,
    ...(unprocessed.length > 0 ? { unprocessed } : {}),
    ...(ctx.subAgent ? { answer: run.lastAssistantText, ...(cutShort ? { cutShort } : {}) } : {}),
    deliveries: run.recentDeliveries.filter((delivery) => delivery.result !== undefined),
  };
}

export async function abortRun(ctx: RunContext): Promise<RunResult> {
  await closeOpenCalls(ctx, ABORTED_TOOL_RESULT_TEXT, "cancelled");
  return finish(ctx, "aborted", ctx.run.abortReason ?? "aborted");
}

/**
 * Ends the run as failed after an activity failed for good (retries exhausted, a non-retryable
 * error, a timeout). The session is closed as far as storage allows: the turn's user messages and
 * an `error` assistant entry at the model's slot (unless the activity stored its answer there),
 * error results for open tool calls. Never throws: a write that fails is logged and the run still
 * reports its failure.
 */
export async function failRun(ctx: RunContext, reason: string): Promise<RunResult> {
  try {
    await closeModelCall(ctx, { stopReason: "error", errorMessage: reason });
    await closeOpenCalls(ctx, UNFINISHED_TOOL_RESULT_TEXT, "failed");
  } catch (error) {
    log.error(
      "closing the session of a failed run failed; the next run repairs it when it opens the session",
      {
        error: String(error),
      },
    );
  }
  return finish(ctx, "failed", reason);
}
