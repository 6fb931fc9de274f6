/**
 * The LLM turn activity: one model call producing the assistant entry at the slot the workflow
 * assigned. If that entry is already stored (an earlier attempt wrote it and then died), the model
 * is not called again: the stored answer is returned.
 *
 * Only a retry looks the slot up before the call: on an activity's first attempt no earlier
 * attempt can have written it (the workflow hands out each slot once; a slot it took back after a
 * context overflow in runs older than the stored overflow had nothing written). Should an entry be there all the same (an
 * operator reset the workflow or the activity), the conditional write still finds it and the
 * stored entry wins, as below; only the model call is spent.
 *
 * A call the workflow switched to another model (failover) records the switch as a
 * `model_change` entry at `modelChange`, right before its answer: a failed call stores neither.
 *
 * While the model streams, its deltas go to the run's stream as `message_update` live events
 * (coalesced; never stored: only the final message is). A retried attempt first publishes a
 * `reset`, so clients replace what an earlier attempt showed instead of appending to it.
 */

import { ApplicationFailure, CancelledFailure, Context } from "@temporalio/activity";
import type { LlmTurnInput, LlmTurnResult, ToolCallSummary } from "../contracts/activities";
import type { TenantBudgetHold } from "../contracts/pause";
import { entryConflict, storeWriteFailures } from "../contracts/store-failures";
import { MAX_TASK_ARGUMENTS_CHARS, TASK_TOOL_NAME, taskToolSpec } from "../core/agents";
import type { AssistantMessageDelta } from "../core/events";
import { FailureType } from "../core/failure-types";
import { CONTEXT_OVERFLOW_PREFIX, FAILED_MARKER, INTERRUPTED_MARKER } from "../core/markers";
import { type AssistantMessage, type ToolSpec, toolCallsOf } from "../core/messages";
import { backoffMs, LLM_RETRY } from "../core/retry-policy";
import { createMessageEntry, createModelChangeEntry } from "../core/session-entries";
import type { SessionEntry } from "../core/session-types";
import { mcpToolSpecs } from "../mcp/tool-names";
import { withUniqueToolCallIds } from "../providers/tool-call-ids";
import type { ModelInfo } from "../providers/types";
import { toolNamed, toolSpecs } from "../tools";
import { entriesBefore, modelMessages, pathOf } from "./conversation";
import type { ActivityDeps } from "./deps";
import { failpoint } from "./failpoints";
import { whileHeartbeating } from "./heartbeat";
import { DEFAULT_LIVE_EVENT_OPTIONS, type LiveEventSink, liveEventSink, withLiveTail } from "./live-events";
import { nextRetryDelayMs, providerErrorFailure, tallyBefore } from "./llm-retry";
import { mcpToolsOfTurn } from "./mcp-tools";

const PREVIEW_CHARS = 500;
const ARGUMENTS_PREVIEW_CHARS = 300;

export function llmTurnActivity(deps: ActivityDeps) {
  const { store, provider, catalog, liveEvents = DEFAULT_LIVE_EVENT_OPTIONS, usage, tenantBudget } = deps;
  return async function llmTurn(input: LlmTurnInput): Promise<LlmTurnResult> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const model = catalog.find(input.model);
    if (!model)
      throw ApplicationFailure.nonRetryable(
        catalog.unknownModelMessage(input.model),
        FailureType.unknownModel,
      );

    for (const write of input.writesFirst)
      await storeWriteFailures(() => store.putEntry(ref, write.seq, write.entry));

    const live = liveEventSink(liveEvents);
    let result: LlmTurnResult;
    try {
      result = await callModel(input, model, live);
    } catch (error) {
      await live.close();
      throw error;
    }
    const tenantBudget = await tenantBudgetAfterTurn(input.tenantId);
    return withLiveTail(tenantBudget ? { ...result, tenantBudget } : result, await live.settle());
  };

  /**
   * Adds the call this attempt made to its tenant's usage, before its answer is stored: every call
   * paid is counted once, by the attempt that made it (one that finds the answer stored made none),
   * on the day the turn was first scheduled. A failed write is logged, never thrown (usage.ts).
   */
  async function recordCallUsage(tenantId: string, message: AssistantMessage): Promise<void> {
    try {
      await usage?.recordTurn(tenantId, {
        atMs: Context.current().info.scheduledTimestampMs,
        tokens: message.usage.totalTokens,
        costUsd: message.usage.cost.total,
      });
    } catch (error) {
      Context.current().log.warn("the turn was not recorded in the tenant's usage", {
        error: error instanceof Error ? error.message : String(error),
      });
    }
    failpoint("llmTurn.afterUsage");
  }

  /**
   * The tenant budget the tenant has used up after this turn, if any (a cached answer: see
   * tenants/budget-check.ts). Never throws: a failed read is logged and the run goes on, to be
   * checked again after its next call; the API still refuses new runs over the budget.
   */
  async function tenantBudgetAfterTurn(tenantId: string): Promise<TenantBudgetHold | undefined> {
    try {
      return await tenantBudget?.reached(tenantId);
    } catch (error) {
      Context.current().log.warn("tenant budget not checked after the turn", {
        error: error instanceof Error ? error.message : String(error),
      });
      return undefined;
    }
  }

  /**
   * The switch to `model` the workflow asked to record (`modelChange`), written right before the
   * call's answer, so a call that fails (and goes on to another model) leaves nothing behind. An
   * earlier attempt's switch (or the workflow's closing one: same id) is kept; another entry at the
   * slot is a conflict, never adopted: the answer would hang off an entry that is not there.
   */
  async function recordModelChange(input: LlmTurnInput, model: ModelInfo): Promise<void> {
    const at = input.modelChange;
    if (!at) return;
    const result = await storeWriteFailures(() =>
      store.putEntry(
        { tenantId: input.tenantId, sessionId: input.sessionId },
        at.seq,
        createModelChangeEntry(at, model.provider, model.id),
      ),
    );
    if (result.entry.id !== at.id || result.entry.type !== "model_change")
      throw entryConflict(
        `the entry stored at the model change's slot is not this call's switch (${result.entry.id})`,
      );
  }

  /** The call itself, streaming its deltas to `live` (see the module comment). */
  async function callModel(
    input: LlmTurnInput,
    model: ModelInfo,
    live: LiveEventSink,
  ): Promise<LlmTurnResult> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const ctx = Context.current();
    const { attempt } = ctx.info;
    const update = (assistantMessageEvent: AssistantMessageDelta) =>
      live.publish({ type: "message_update", entryId: input.slot.id, attempt, assistantMessageEvent });
    // An earlier attempt may have streamed part of this message: clients drop it.
    if (attempt > 1) update({ type: "reset" });

    if (attempt > 1) {
      const stored = await store.getEntry(ref, input.slot.seq);
      if (stored) {
        const message = assistantOf(stored, input.slot.id);
        // A client that saw the earlier attempt's deltas just reset: it gets the stored message.
        for (const delta of deltasOf(message)) update(delta);
        return summarize(message, true, model.contextWindow);
      }
    }

    // A switch's `model_change` entry is written with the answer: the context ends before it.
    const before = input.modelChange ?? input.slot;
    const entries = await entriesBefore(store, ref, before.seq);
    const path = pathOf(entries, before.parentId);
    const messages = modelMessages(entries, before.parentId);
    const tools = input.tools.flatMap((name) => {
      const tool = toolNamed(name);
      return tool ? [tool] : [];
    });
    const mcpTools = await mcpToolsOfTurn(deps, input);

    const carried = tallyBefore(ctx);
    const outcome = await whileHeartbeating(
      ctx,
      "waiting",
      (heartbeat) =>
        provider.complete(
          model,
          {
            systemPrompt: input.systemPrompt,
            messages,
            tools: [...toolSpecs(tools), ...taskSpec(input), ...mcpToolSpecs(mcpTools)],
          },
          {
            thinkingLevel: input.thinkingLevel,
            signal: ctx.cancellationSignal,
            onProgress: (progress) =>
              heartbeat({ textChars: progress.textChars, toolCalls: progress.toolCalls }),
            onDelta: update,
            canFailOver: input.canFailOver === true,
          },
        ),
      carried,
    );
    const error = outcome.error;
    // Ids must stay unique keys in the conversation (results are paired with calls by id);
    // servers that number calls per response (`call_0`) would repeat them on every turn.
    const message = withUniqueToolCallIds(outcome.message, toolCallIdsOn(path), input.slot.id);

    if (error?.kind === "aborted" || ctx.cancellationSignal.aborted) {
      await recordModelChange(input, model);
      await storeWriteFailures(() =>
        store.putEntry(ref, input.slot.seq, createMessageEntry(input.slot, interrupted(message))),
      );
      throw new CancelledFailure("the model call was cancelled; its partial answer is stored");
    }
    if (error?.kind === "retryable") {
      const { failure, tally } = providerErrorFailure(
        ctx,
        carried,
        `${model.id}: ${error.message}`,
        error,
        input.canFailOver === true,
      );
      if (!failure.nonRetryable)
        live.publish({
          type: "retry",
          entryId: input.slot.id,
          attempt,
          providerErrors: tally.providerErrors,
          maxAttempts: LLM_RETRY.maximumAttempts,
          delayMs: nextRetryDelayMs(attempt, error.retryAfterMs) ?? backoffMs(attempt),
          error: `${error.status !== undefined ? `HTTP ${error.status}` : "network"}: ${error.message}`,
        });
      throw failure;
    }
    if (error?.kind === "context_overflow") {
      // The call is stored as a failed answer (the model is not shown it again) with the usage
      // the server reported: a prompt it took is billed, and the session's usage is the run's.
      await recordCallUsage(input.tenantId, message);
      await recordModelChange(input, model);
      const result = await storeWriteFailures(() =>
        store.putEntry(
          ref,
          input.slot.seq,
          createMessageEntry(input.slot, overflowed(message, error.message)),
        ),
      );
      return summarize(assistantOf(result.entry, input.slot.id), !result.written, model.contextWindow);
    }

    await recordCallUsage(input.tenantId, message);
    await recordModelChange(input, model);
    const result = await storeWriteFailures(() =>
      store.putEntry(ref, input.slot.seq, createMessageEntry(input.slot, message)),
    );
    failpoint("llmTurn.afterWrite");
    const summary = summarize(assistantOf(result.entry, input.slot.id), !result.written, model.contextWindow);
    // An entry stored earlier is the answer, whatever this call returned (as a look-up would have).
    return summary;
  }
}

/** A stored message as the deltas that build it, one per content block. */
function deltasOf(message: AssistantMessage): AssistantMessageDelta[] {
  return message.content.flatMap((block, contentIndex): AssistantMessageDelta[] => {
    if (block.type === "text" && block.text) return [{ type: "text_delta", contentIndex, delta: block.text }];
    if (block.type === "thinking" && block.thinking)
      return [{ type: "thinking_delta", contentIndex, delta: block.thinking }];
    if (block.type === "toolCall")
      return [{ type: "toolcall_delta", contentIndex, delta: JSON.stringify(block.arguments) }];
    return [];
  });
}

function assistantOf(entry: SessionEntry, expectedId: string): AssistantMessage {
  if (entry.id !== expectedId || entry.type !== "message" || entry.message.role !== "assistant") {
    throw entryConflict(
      `the entry stored at the assistant slot is not the expected assistant message (${entry.id})`,
    );
  }
  return entry.message;
}

/** The partial answer of a cancelled call: its text, marked, without half-formed tool calls. */
function interrupted(message: AssistantMessage): AssistantMessage {
  const text = message.content.flatMap((block) => (block.type === "text" && block.text ? [block.text] : []));
  return {
    ...message,
    content: [{ type: "text", text: [...text, INTERRUPTED_MARKER].join("\n\n") }],
    stopReason: "aborted",
    errorMessage: message.errorMessage ?? "cancelled",
  };
}

/** What is stored of a call that overflowed the context window: why, and the usage it cost. */
function overflowed(message: AssistantMessage, why: string): AssistantMessage {
  const errorMessage = `${CONTEXT_OVERFLOW_PREFIX}${why}`;
  return {
    ...message,
    content: [{ type: "text", text: `${FAILED_MARKER} ${errorMessage}` }],
    stopReason: "error",
    errorMessage,
  };
}

/**
 * How a stored failed answer failed: an overflow says so in its error text (see `overflowed`),
 * anything else the model could not be asked again about. Read from the entry, so an attempt that
 * finds an earlier attempt's entry reports the same failure.
 */
function errorOf(
  message: AssistantMessage,
): Pick<LlmTurnResult, "errorKind" | "errorMessage" | "overflowStored"> {
  if (message.stopReason !== "error") return {};
  const text = message.errorMessage ?? "";
  return text.startsWith(CONTEXT_OVERFLOW_PREFIX)
    ? {
        errorKind: "context_overflow",
        errorMessage: text.slice(CONTEXT_OVERFLOW_PREFIX.length),
        overflowStored: true,
      }
    : { errorKind: "non_retryable", errorMessage: text };
}

/** Ids of the tool calls on a path of entries. */
function toolCallIdsOn(path: readonly SessionEntry[]): Set<string> {
  return new Set(
    path.flatMap((entry) =>
      entry.type === "message" && entry.message.role === "assistant"
        ? toolCallsOf(entry.message).map((call) => call.id)
        : [],
    ),
  );
}

/** The `task` tool's spec, when the run offers it (its tools name it and it has agents). */
function taskSpec(input: LlmTurnInput): ToolSpec[] {
  return input.tools.includes(TASK_TOOL_NAME) && input.agents?.length ? [taskToolSpec(input.agents)] : [];
}

function summarize(message: AssistantMessage, adopted: boolean, contextWindow: number): LlmTurnResult {
  const text = message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
  const toolCalls: ToolCallSummary[] = toolCallsOf(message).map((call) => {
    const json = JSON.stringify(call.arguments);
    // The workflow reads a task call's arguments from here: they get more room.
    const limit = call.name === TASK_TOOL_NAME ? MAX_TASK_ARGUMENTS_CHARS : ARGUMENTS_PREVIEW_CHARS;
    return {
      id: call.id,
      name: call.name,
      argumentsPreview: json.length > limit ? `${json.slice(0, limit)}…` : json,
      label: labelOf(call.arguments),
    };
  });
  const usage = message.usage;
  return {
    stopReason: message.stopReason,
    adopted,
    usage,
    contextTokens: usage.input + usage.cacheRead + usage.cacheWrite + usage.output,
    contextWindow,
    textPreview: text.slice(0, PREVIEW_CHARS),
    toolCalls,
    ...errorOf(message),
  };
}

/** The argument that says what a call does: a command, a path or a pattern. */
function labelOf(args: Record<string, unknown>): string {
  for (const key of ["command", "path", "pattern"]) {
    const value = args[key];
    if (typeof value === "string") return value.slice(0, 120);
  }
  return "";
}
