/**
 * The tool activity: runs one tool call in the session's workspace and writes its result at the
 * slot the workflow assigned. A stored result is returned as is; an `unsafe` tool (bash) that an
 * earlier attempt may have started is not run again — the model is told the outcome is unknown.
 *
 * The result slot is looked up before running only where it can pay off. A read-only (`safe`)
 * tool on an activity's first attempt runs straight away: an entry can be at its slot only when
 * an earlier activity for the same call wrote it and the workflow scheduled the call again (its
 * workspace moved to another worker, or an operator reset), and then running a read-only tool
 * once more is harmless — the conditional write finds the stored result and it is returned.
 * Retries, and tools that change things, look first.
 *
 * While it runs, the tool's output so far goes to the run's stream as `tool_execution_update`.
 * After a tool that may change files, the workspace is snapshotted at the result's entry before
 * the result is stored, so a worker dying right after storing it loses no file change.
 */
import { CancelledFailure, Context } from "@temporalio/activity";
import type { LiveEvent } from "../core/events";
import { UNKNOWN_OUTCOME_TEXT } from "../core/markers";
import type { ToolCallBlock, ToolResultMessage } from "../core/messages";
import { createMessageEntry } from "../core/session-entries";
import type { SessionEntry } from "../core/session-types";
import type { SessionRef } from "../store/session-keys";
import type { MarkerSubject } from "../store/tool-call-markers";
import { runToolCall, toolNamed, toToolResultMessage, workspaceFor } from "../tools";
import type { ToolUpdate } from "../tools/types";
import type { ActivityDeps } from "./deps";
import { failpoint } from "./failpoints";
import { whileHeartbeating } from "./heartbeat";
import { DEFAULT_LIVE_EVENT_OPTIONS, liveEventSink, withLiveTail } from "./live-events";
import { mcpToolsChangedFor, runMcpCall } from "./mcp-tools";
import { entryConflict, storeWriteFailures } from "./store-failures";
import type { ExecuteToolInput, ExecuteToolResult } from "./types";
import { inCallWorkspace } from "./workspace-activities";

const PREVIEW_CHARS = 300;
/** Output a `tool_execution_update` carries at most (the tail): its consumers show a live tail. */
const PARTIAL_CHARS = 2_000;
/** Least time between two published updates of one tool (each carries the output so far). */
const UPDATE_INTERVAL_MS = 1_000;

/** The result of a call that reached a worker of a deployment that runs no tools on its workers. */
export const WORKER_TOOLS_OFF_TEXT =
  "This deployment runs no tools on its workers (KEEL_WORKER_TOOLS=off): the run must name a runner or launched environment. The call did not run.";

/** What the call's work returns when another attempt marked the call started first. */
const STARTED_BY_ANOTHER_ATTEMPT = Symbol("started by another attempt");

export function executeToolActivity(deps: ActivityDeps) {
  const {
    store,
    markers,
    snapshots,
    snapshotMaxBytes,
    workspaceRoot,
    sandbox,
    liveEvents = DEFAULT_LIVE_EVENT_OPTIONS,
    workerTools = true,
  } = deps;
  return async function executeTool(input: ExecuteToolInput): Promise<ExecuteToolResult> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const ctx = Context.current();
    const call = await toolCallOf(store, input);
    // An MCP tool's class is the one the run recorded from its server's annotations.
    const replay = input.mcp?.replay ?? toolNamed(call.name)?.replay;
    if (ctx.info.attempt > 1 || replay !== "safe") {
      const stored = await store.getEntry(ref, input.slot.seq);
      if (stored) return summarize(resultOf(stored, input.slot.id), "adopted");
    }

    const toolCall: ToolCallBlock = { ...call, arguments: input.argumentsOverride ?? call.arguments };
    // What ran is what is stored: an edit made at approval is recorded in the result itself.
    const write = async (message: ToolResultMessage) => {
      const recorded = input.argumentsOverride
        ? withApprovedEdit(message, call.arguments, input.argumentsOverride)
        : message;
      const entry = createMessageEntry(input.slot, recorded);
      return storeWriteFailures(() => store.putEntry(ref, input.slot.seq, entry));
    };
    /** Stores an error result in place of running the call. */
    const refuse = async (text: string, outcome: "executed" | "unknown_outcome") => {
      const message = toToolResultMessage(
        toolCall,
        { content: [{ type: "text", text }], isError: true },
        Date.now(),
      );
      const { entry } = await write(message);
      return summarize(resultOf(entry, input.slot.id), outcome);
    };

    // The API refuses such runs; this holds for any that reach a worker anyway (started before
    // the switch, or by a path that missed it): nothing of the agent's runs here.
    if (!workerTools) return refuse(WORKER_TOOLS_OFF_TEXT, "executed");

    const marker: MarkerSubject = { kind: "toolCall", resultSlot: input.slot, toolCallId: call.id };
    // An unsafe call that another attempt started is refused before the workspace is touched:
    // taking it (on the shared queue) would give up the changes that attempt made. Checked on
    // every attempt: the workflow schedules a moved call anew, at attempt 1 again.
    if (replay === "unsafe" && (await markers.wasStarted(ref, marker))) {
      return refuse(UNKNOWN_OUTCOME_TEXT, "unknown_outcome");
    }

    const startedMs = Date.now();
    const workspace = workspaceFor(workspaceRoot, input.tenantId, input.sessionId);
    // The run claimed the workspace once, but this worker may not have it (any Lambda execution
    // environment takes tool tasks of the shared queue; idle eviction may have removed it): the
    // call then works on the state of its assistant entry, never on an empty directory.
    const leafId = input.slot.parentId;
    let liveTail: LiveEvent[] = [];
    const output = await inCallWorkspace(deps, ref, workspace, leafId, async () => {
      // An abort that came while the workspace was made ready: the call never starts.
      if (ctx.cancellationSignal.aborted)
        throw new CancelledFailure("the call was cancelled before it started");
      // Marked once the workspace is ready, right before the call runs: an S3 failure while it
      // was made ready (taken, restored) leaves no marker, so the retry runs the call.
      if (replay === "unsafe" && !(await markers.markStarted(ref, marker, ctx.info.attempt))) {
        return STARTED_BY_ANOTHER_ATTEMPT;
      }
      const live = liveEventSink(liveEvents);
      let lastUpdate = 0;
      const result = await whileHeartbeating(ctx, "running", (heartbeat) => {
        const onUpdate = (update: ToolUpdate) => {
          heartbeat({ phase: "update" });
          if (Date.now() - lastUpdate < UPDATE_INTERVAL_MS) return;
          lastUpdate = Date.now();
          live.publish({
            type: "tool_execution_update",
            toolCallId: call.id,
            toolName: call.name,
            attempt: ctx.info.attempt,
            partial: tailOf(update),
          });
        };
        if (input.mcp) {
          const args = toolCall.arguments;
          return runMcpCall(deps, ref, input.network, input.mcp, args, ctx.cancellationSignal, onUpdate);
        }
        return runToolCall(toolCall, {
          workspace,
          sandbox: { ...sandbox, network: input.network ?? "none", tenantId: input.tenantId },
          signal: ctx.cancellationSignal,
          onUpdate,
        });
      }).catch(async (error: unknown) => {
        await live.close();
        throw error;
      });
      liveTail = await live.settle();
      // Before the result is stored: a stored result always has a snapshot at least as new, so a
      // worker that takes the workspace over after a crash restores this call's changes.
      if (replay !== "safe") {
        await snapshotBeforeResult({ snapshots, snapshotMaxBytes }, ref, workspace.dir, input.slot, call.id);
      }
      return result;
    });
    if (output === STARTED_BY_ANOTHER_ATTEMPT) return refuse(UNKNOWN_OUTCOME_TEXT, "unknown_outcome");
    const { entry, written } = await write(toToolResultMessage(toolCall, output, Date.now()));
    // Only the attempt that stored the result counts its time (never twice; lost if it dies now).
    if (written) await recordToolTime(deps, ref, input.slot.seq, startedMs);
    failpoint("executeTool.afterWrite");
    if (ctx.cancellationSignal.aborted)
      throw new CancelledFailure("the tool was cancelled; its output is stored");
    const changed = input.mcp ? mcpToolsChangedFor(deps, ref) : [];
    return withLiveTail(
      {
        ...summarize(resultOf(entry, input.slot.id), written ? "executed" : "adopted"),
        ...(changed.length > 0 ? { mcpToolsChanged: changed } : {}),
      },
      liveTail,
    );
  };
}

/** Adds the call's duration to its tenant's usage; a failure is logged, never thrown. */
async function recordToolTime(deps: ActivityDeps, ref: SessionRef, slotSeq: number, startedMs: number) {
  try {
    await deps.usage?.recordTool(ref.tenantId, {
      sessionId: ref.sessionId,
      slotSeq,
      atMs: startedMs,
      ms: Date.now() - startedMs,
    });
  } catch (error) {
    Context.current().log.warn("the tool call's usage was not recorded", {
      sessionId: ref.sessionId,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/**
 * Records the workspace in `dir` as the state after the result entry `slot` of call `toolCallId`,
 * before that result is stored (docs/store.md, "Tied to entries"). A failure (too large, S3 errors
 * after retries) is logged and never thrown: the result must be stored whatever happens, the files
 * are on this worker, and the workflow's snapshot after the batch tries again.
 */
async function snapshotBeforeResult(
  { snapshots, snapshotMaxBytes }: Pick<ActivityDeps, "snapshots" | "snapshotMaxBytes">,
  ref: SessionRef,
  dir: string,
  slot: ExecuteToolInput["slot"],
  toolCallId: string,
): Promise<void> {
  const ctx = Context.current();
  try {
    await whileHeartbeating(ctx, "snapshotting", () =>
      snapshots.snapshot(ref, dir, { afterEntryId: slot.id, afterSeq: slot.seq, maxBytes: snapshotMaxBytes }),
    );
  } catch (error) {
    ctx.log.warn("the workspace snapshot before the tool result failed; the result is stored", {
      sessionId: ref.sessionId,
      toolCallId,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

export async function toolCallOf(
  store: ActivityDeps["store"],
  input: ExecuteToolInput,
): Promise<ToolCallBlock> {
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
export function tailOf(update: ToolUpdate): string {
  const text = update.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
  return text.length > PARTIAL_CHARS ? text.slice(-PARTIAL_CHARS) : text;
}

export function resultOf(entry: SessionEntry, expectedId: string): ToolResultMessage {
  if (entry.id !== expectedId || entry.type !== "message" || entry.message.role !== "toolResult") {
    throw entryConflict(`the entry stored at the tool result slot is not the expected result (${entry.id})`);
  }
  return entry.message;
}

export function summarize(
  message: ToolResultMessage,
  outcome: ExecuteToolResult["outcome"],
): ExecuteToolResult {
  const text = message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
  return { isError: message.isError, outcome, preview: text.slice(0, PREVIEW_CHARS) };
}

/**
 * The result of a call a person approved with edited arguments: the model reads first that its call
 * was changed and what ran, and `details.approval` keeps both argument sets for people and tools.
 */
export function withApprovedEdit(
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
