/**
 * The tool activity: runs one tool call in the session's workspace and writes its result at the
 * slot the workflow assigned. A stored result is returned as is; an `unsafe` tool (bash) that an
 * earlier attempt may have started is not run again — the model is told the outcome is unknown.
 * While it runs, the tool's output so far goes to the run's stream as `tool_execution_update`.
 */
import { CancelledFailure, Context } from "@temporalio/activity";
import { UNKNOWN_OUTCOME_TEXT } from "../core/markers";
import type { ToolCallBlock, ToolResultMessage } from "../core/messages";
import { createMessageEntry } from "../core/session-entries";
import type { SessionEntry } from "../core/session-types";
import { runToolCall, toolNamed, toToolResultMessage, workspaceFor } from "../tools";
import type { ToolUpdate } from "../tools/types";
import type { ActivityDeps } from "./deps";
import { failpoint } from "./failpoints";
import { whileHeartbeating } from "./heartbeat";
import { DEFAULT_LIVE_EVENT_OPTIONS, liveEventSink } from "./live-events";
import { entryConflict, storeWriteFailures } from "./store-failures";
import type { ExecuteToolInput, ExecuteToolResult } from "./types";
import { touchWorkspace } from "./workspace-eviction";

const PREVIEW_CHARS = 300;
/** Output a `tool_execution_update` carries at most (the tail): its consumers show a live tail. */
const PARTIAL_CHARS = 2_000;
/** Least time between two published updates of one tool (each carries the output so far). */
const UPDATE_INTERVAL_MS = 1_000;

export function executeToolActivity({
  store,
  markers,
  workspaceRoot,
  sandbox,
  liveEvents = DEFAULT_LIVE_EVENT_OPTIONS,
}: ActivityDeps) {
  return async function executeTool(input: ExecuteToolInput): Promise<ExecuteToolResult> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const ctx = Context.current();
    const stored = await store.getEntry(ref, input.slot.seq);
    if (stored) return summarize(resultOf(stored, input.slot.id), "adopted");

    const call = await toolCallOf(store, input);
    const toolCall: ToolCallBlock = { ...call, arguments: input.argumentsOverride ?? call.arguments };
    // What ran is what is stored: an edit made at approval is recorded in the result itself.
    const write = async (message: ToolResultMessage) => {
      const recorded = input.argumentsOverride
        ? withApprovedEdit(message, call.arguments, input.argumentsOverride)
        : message;
      const entry = createMessageEntry(input.slot, recorded);
      return (await storeWriteFailures(() => store.putEntry(ref, input.slot.seq, entry))).entry;
    };

    if (toolNamed(call.name)?.replay === "unsafe") {
      const firstStart = await markers.markStarted(
        ref,
        { kind: "toolCall", resultSlot: input.slot, toolCallId: call.id },
        ctx.info.attempt,
      );
      if (!firstStart) {
        const entry = await write(
          toToolResultMessage(
            toolCall,
            { content: [{ type: "text", text: UNKNOWN_OUTCOME_TEXT }], isError: true },
            Date.now(),
          ),
        );
        return summarize(resultOf(entry, input.slot.id), "unknown_outcome");
      }
    }

    const workspace = workspaceFor(workspaceRoot, input.tenantId, input.sessionId);
    await touchWorkspace(workspace);
    const live = liveEventSink(liveEvents);
    let lastUpdate = 0;
    const output = await whileHeartbeating(ctx, "running", () =>
      runToolCall(toolCall, {
        workspace,
        sandbox: { ...sandbox, network: input.network ?? "none" },
        signal: ctx.cancellationSignal,
        onUpdate: (update) => {
          ctx.heartbeat({ phase: "update" });
          if (Date.now() - lastUpdate < UPDATE_INTERVAL_MS) return;
          lastUpdate = Date.now();
          live.publish({
            type: "tool_execution_update",
            toolCallId: call.id,
            toolName: call.name,
            attempt: ctx.info.attempt,
            partial: tailOf(update),
          });
        },
      }),
    ).finally(() => live.close());
    const entry = await write(toToolResultMessage(toolCall, output, Date.now()));
    failpoint("executeTool.afterWrite");
    if (ctx.cancellationSignal.aborted)
      throw new CancelledFailure("the tool was cancelled; its output is stored");
    return summarize(resultOf(entry, input.slot.id), "executed");
  };
}

async function toolCallOf(store: ActivityDeps["store"], input: ExecuteToolInput): Promise<ToolCallBlock> {
  const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
  const entry = await store.getEntry(ref, input.assistantSeq);
  const call =
    entry?.type === "message" && entry.message.role === "assistant"
      ? entry.message.content.find((block) => block.type === "toolCall" && block.id === input.toolCallId)
      : undefined;
  if (call?.type !== "toolCall") {
    throw entryConflict(
      `tool call ${input.toolCallId} is not in the assistant entry at seq ${input.assistantSeq}`,
    );
  }
  return call;
}

/** The update's text, its last `PARTIAL_CHARS` characters when longer (the run's history carries it). */
function tailOf(update: ToolUpdate): string {
  const text = update.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
  return text.length > PARTIAL_CHARS ? text.slice(-PARTIAL_CHARS) : text;
}

function resultOf(entry: SessionEntry, expectedId: string): ToolResultMessage {
  if (entry.id !== expectedId || entry.type !== "message" || entry.message.role !== "toolResult") {
    throw entryConflict(`the entry stored at the tool result slot is not the expected result (${entry.id})`);
  }
  return entry.message;
}

function summarize(message: ToolResultMessage, outcome: ExecuteToolResult["outcome"]): ExecuteToolResult {
  const text = message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
  return { isError: message.isError, outcome, preview: text.slice(0, PREVIEW_CHARS) };
}

/**
 * The result of a call a person approved with edited arguments: the model reads first that its call
 * was changed and what ran, and `details.approval` keeps both argument sets for people and tools.
 */
function withApprovedEdit(
  message: ToolResultMessage,
  requested: Record<string, unknown>,
  executed: Record<string, unknown>,
): ToolResultMessage {
  const note = `[Approved with edited arguments: it ran with ${JSON.stringify(executed)} instead of ${JSON.stringify(requested)}]`;
  const details = typeof message.details === "object" && message.details !== null ? message.details : {};
  return {
    ...message,
    content: [{ type: "text", text: note }, ...message.content],
    details: {
      ...details,
      approval: { decision: "approved_with_edits", arguments: executed, requestedArguments: requested },
    },
  };
}
