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
  patched,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from "@temporalio/workflow";
import type { AppendEntriesResult, EntrySlot, EntryWrite } from "../../activities/types";
import { ABORTED_TOOL_RESULT_TEXT, UNFINISHED_TOOL_RESULT_TEXT } from "../../core/markers";
import type { ToolCallState } from "../../core/tool-registry";
import type { RunHooks } from "../hooks";
import { type RunAttributePair, RunStatusAttribute } from "../search-attributes";
import type { RunInput, RunResult, RunStatus } from "../types";
import { type llmActivities, replies, storage } from "./activity-options";
import { syntheticToolResult, unansweredAssistant } from "./entries";
import { type BatchCall, emit, moveCall, openCalls, type RunRecord, takeAllQueued } from "./state";
import type { RunStream } from "./stream";

const PREVIEW_CHARS = 200;
/** Runs that wait (with a timer) for stream subscribers before closing. */
const STREAM_DRAIN_PATCH = "run-stream-drain";

/** The run's state plus what only the workflow can hold: activity proxies and the cancel scope. */
export interface RunContext {
  run: RunRecord;
  hooks: RunHooks[];
  llm: ReturnType<typeof llmActivities>;
  /** The work an abort or interrupt cancels. */
  inFlight?: CancellationScope;
  /** The model call under way: what a failure must close (its user messages and its slot). */
  modelCall?: { slot: EntrySlot; writesFirst: EntryWrite[] };
  /** Task queue of the worker holding the workspace, once claimed (claimed once per run). */
  workspaceQueue?: Promise<string>;
  /** This run's openSession created the session, and no workspace claim was made since. */
  unclaimedNewSession?: boolean;
  /** A tool that may change files ran since the last snapshot (refused or blocked calls did not). */
  ranMutatingTool?: boolean;
  /** The run's stream of events and deltas. */
  stream: RunStream;
  /** `RunInput.runVersion`, 0 when absent. */
  runVersion: number;
}

/**
 * Whether the run takes the branch added by `patchId`, one of the patches older than run
 * version 1 (see `RUN_VERSION`): always for runs of that version, by `patched()` for the others.
 */
export function takesPatch(ctx: Pick<RunContext, "runVersion">, patchId: string): boolean {
  return ctx.runVersion >= 1 || patched(patchId);
}

/**
 * The run's current details in the Temporal UI: its status first (an ended run's Temporal status
 * is Completed whatever its outcome, so the outcome and why are stated here), then its progress.
 */
export function publishDetails({ run }: RunContext): void {
  const cost = run.usage.cost.total.toFixed(4);
  const last = run.lastAssistantText ? `\n\n${run.lastAssistantText.slice(0, PREVIEW_CHARS)}` : "";
  const unsandboxed = run.unsandboxed ? " · ⚠ tools run without a sandbox" : "";
  const why =
    run.ended && run.endReason ? ` (${run.endReason.replace(/\s+/g, " ").slice(0, PREVIEW_CHARS)})` : "";
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
 * kept, and the event then says the call completed: events describe what is stored.
 */
export async function closeOpenCalls(ctx: RunContext, text: string, state: ToolCallState): Promise<void> {
  const open = openCalls(ctx.run);
  const { adoptedSeqs = [] } = await writeEntries(
    ctx,
    open.map((call) => syntheticToolResult(call, text, ctx.run.clock.now())),
  );
  for (const call of open) {
    const keptToolResult = adoptedSeqs.includes(call.slot.seq);
    endCall(ctx, call, keptToolResult ? "completed" : state, !keptToolResult);
  }
}

/** Ends the run: no message is accepted from here on; a chat thread gets the answer. */
export async function finish(
  ctx: RunContext,
  final: RunResult["status"],
  reason: string,
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
  // Subscribers get the last items (`agent_end`) before the execution closes: an update still
  // running when it closes fails, and its items would be lost. No handler of the run's own
  // awaits, so waiting for handlers adds no wait (and no command) to older histories.
  if (takesPatch(ctx, STREAM_DRAIN_PATCH)) await ctx.stream.drain();
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
    usage: run.usage,
    leafId: run.cursor?.leafId ?? null,
    nextSeq: run.cursor?.nextSeq ?? 0,
    ...(unprocessed.length > 0 ? { unprocessed } : {}),
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
  const { run } = ctx;
  try {
    if (ctx.modelCall) {
      const { slot, writesFirst } = ctx.modelCall;
      await writeEntries(ctx, [
        ...writesFirst,
        unansweredAssistant(
          slot,
          run.next.model,
          { stopReason: "error", errorMessage: reason },
          run.clock.now(),
        ),
      ]);
      ctx.modelCall = undefined;
    }
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
