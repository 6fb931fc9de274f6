/**
 * One tool call's lifecycle, the same wherever the call runs. Two transports carry it: a worker
 * (`executeTool`, src/activities/execute-tool.ts) runs the call inside one activity attempt; a
 * runner's call (src/environments/calls.ts) is claimed, run on the runner and reported through
 * the API in separate requests. Both take every rule from here:
 *
 * - the replay class of a call (an MCP tool's as the run recorded it, a built-in's from its table);
 * - when to look for a result an earlier attempt stored (`looksForStoredResult`);
 * - the start marker of an `unsafe` call: checked, and written right before the call runs
 *   (`startedBefore`, `markStarted`; when "right before" is, each transport says: the worker once
 *   the workspace is ready, the API at the claim — docs/environments.md, "The same call as on a
 *   worker");
 * - the result entry: built (an approved edit recorded in it), stored at the slot the workflow
 *   assigned (conditional create: a result already there is adopted), summarized for the workflow;
 * - the call's tool time in its tenant's usage, counted by the attempt whose result was stored;
 * - its `execute_tool` span and `keel.tool.duration` metric (docs/architecture.md, "Traces and
 *   metrics").
 */
import { type Attributes, type Span, SpanStatusCode } from "@opentelemetry/api";
import type { EntrySlot, ExecuteToolInput, ExecuteToolResult } from "../contracts/activities";
import { entryConflict, storeWriteFailures } from "../contracts/store-failures";
import type { ToolCallBlock, ToolResultMessage } from "../core/messages";
import { createMessageEntry } from "../core/session-entries";
import type { SessionEntry } from "../core/session-types";
import { type ReplayClass, TOOL_REPLAY_CLASSES } from "../core/tool-replay";
import type { SessionRef } from "../store/session-keys";
import type { SessionStore } from "../store/session-store";
import type { MarkerSubject, ToolCallMarkers } from "../store/tool-call-markers";
import { instrumentation, keelInstruments, keelTracer } from "../telemetry/instrumentation";
import type { TenantUsage } from "../tenants/usage";
import { toToolResultMessage } from "../tools";
import type { ToolOutput, ToolUpdate } from "../tools/types";

const PREVIEW_CHARS = 300;
/** Output a `tool_execution_update` carries at most (the tail): its consumers show a live tail. */
const PARTIAL_CHARS = 2_000;

/** One attempt at a tool call, as both transports know it. */
export interface ToolCallAttempt {
  ref: SessionRef;
  /** Where its result entry goes (assigned by the workflow). */
  slot: EntrySlot;
  /** The provider's call id and the tool's name. */
  toolCallId: string;
  toolName: string;
  /** An MCP tool: its name on its server and the replay class the run recorded for it. */
  mcp?: { tool: string; replay: ReplayClass };
  /** Temporal's attempt of the call's activity. */
  attempt: number;
}

/** What the lifecycle reads and writes. */
export interface ToolCallDeps {
  store: Pick<SessionStore, "getEntry" | "putEntry">;
  markers: Pick<ToolCallMarkers, "markStarted" | "wasStarted">;
  /** Where tool time is counted per tenant (absent: not counted). */
  usage?: Pick<TenantUsage, "recordTool">;
  now: () => number;
  /** What is logged and never thrown (tool time that could not be recorded). */
  warn?: (message: string, fields: Record<string, unknown>) => void;
}

/** The attempt at the call an activity's input names (a worker's `executeTool`, a runner's `executeToolOnRunner`). */
export function attemptOf(
  input: Pick<ExecuteToolInput, "tenantId" | "sessionId" | "slot" | "toolCallId" | "toolName" | "mcp">,
  attempt: number,
): ToolCallAttempt {
  return {
    ref: { tenantId: input.tenantId, sessionId: input.sessionId },
    slot: input.slot,
    toolCallId: input.toolCallId,
    toolName: input.toolName,
    ...(input.mcp ? { mcp: { tool: input.mcp.tool, replay: input.mcp.replay } } : {}),
    attempt,
  };
}

/**
 * A call's replay class: an MCP tool's is the one the run recorded from its server's annotations,
 * a built-in's is in its table; a name neither knows is treated as `unsafe` (never run twice
 * unknowingly).
 */
export function replayClassOf(call: Pick<ToolCallAttempt, "toolName" | "mcp">): ReplayClass {
  return (
    call.mcp?.replay ?? TOOL_REPLAY_CLASSES[call.toolName as keyof typeof TOOL_REPLAY_CLASSES] ?? "unsafe"
  );
}

/**
 * Whether an attempt looks for a stored result before running the call: every attempt of a call
 * that is not `safe` (a call moved to another queue or worker is scheduled anew, at attempt 1,
 * and an earlier activity may have stored its result), and retries of a `safe` one. A `safe` call
 * on a first attempt runs straight away: running a read-only tool again is harmless, and the
 * conditional write then finds the stored result and adopts it.
 */
export function looksForStoredResult(replay: ReplayClass, attempt: number): boolean {
  return attempt > 1 || replay !== "safe";
}

/** Only `unsafe` calls carry a start marker: the others may run again (docs/architecture.md, "Idempotency rules"). */
const guardedByMarker = (call: ToolCallAttempt) => replayClassOf(call) === "unsafe";

const markerOf = (call: ToolCallAttempt): MarkerSubject => ({
  kind: "toolCall",
  resultSlot: call.slot,
  toolCallId: call.toolCallId,
});

/** The result an earlier attempt stored, adopted; looked for where `looksForStoredResult` says. */
export async function storedResult(
  deps: ToolCallDeps,
  call: ToolCallAttempt,
): Promise<ExecuteToolResult | undefined> {
  if (!looksForStoredResult(replayClassOf(call), call.attempt)) return undefined;
  const stored = await deps.store.getEntry(call.ref, call.slot.seq);
  return stored && summarize(resultOf(stored, call.slot.id), "adopted");
}

/** Whether another attempt started this `unsafe` call (asked before its workspace is touched). */
export async function startedBefore(deps: ToolCallDeps, call: ToolCallAttempt): Promise<boolean> {
  return guardedByMarker(call) && deps.markers.wasStarted(call.ref, markerOf(call));
}

/**
 * Marks an `unsafe` call started, right before it runs: false when another attempt marked it
 * first (this one must not run it: the model gets the unknown-outcome result). Other calls need
 * no marker: true.
 */
export async function markStarted(deps: ToolCallDeps, call: ToolCallAttempt): Promise<boolean> {
  return !guardedByMarker(call) || deps.markers.markStarted(call.ref, markerOf(call), call.attempt);
}

/** A person's edit at approval: what ran instead of what the model asked for. */
export interface ApprovedEdit {
  requested: Record<string, unknown>;
  executed: Record<string, unknown>;
}

/** The output of a call refused instead of run (an error result saying why). */
export const refusal = (text: string): ToolOutput => ({ content: [{ type: "text", text }], isError: true });

/**
 * Stores the call's result at its slot unless a result is there already (then that one is
 * adopted). `ranSinceMs`, for output the call produced by running: when it started; the attempt
 * whose result is stored counts the time since then in its tenant's usage (never twice; lost if
 * the process dies right after storing it). That record is `counted`, under way when this
 * returns so that a transport may complete the call meanwhile; it never rejects, and the
 * transport awaits it before it is done.
 */
export async function storeResult(
  deps: ToolCallDeps,
  call: ToolCallAttempt,
  output: ToolOutput,
  options: {
    outcome: "executed" | "unknown_outcome";
    edit?: ApprovedEdit;
    ranSinceMs?: number;
  },
): Promise<{ result: ExecuteToolResult; written: boolean; counted: Promise<void> }> {
  const message = toToolResultMessage(
    { type: "toolCall", id: call.toolCallId, name: call.toolName, arguments: {} },
    output,
    deps.now(),
  );
  // What ran is what is stored: an edit made at approval is recorded in the result itself.
  const recorded = options.edit
    ? withApprovedEdit(message, options.edit.requested, options.edit.executed)
    : message;
  const { entry, written } = await storeWriteFailures(() =>
    deps.store.putEntry(call.ref, call.slot.seq, createMessageEntry(call.slot, recorded)),
  );
  const counted =
    written && options.ranSinceMs !== undefined
      ? recordToolTime(deps, call.ref, options.ranSinceMs)
      : Promise.resolve();
  return {
    result: summarize(resultOf(entry, call.slot.id), written ? options.outcome : "adopted"),
    written,
    counted,
  };
}

/**
 * Adds the sandbox time since `startedMs` to the tenant's usage as tool time (a tool call's, an
 * eval's checks): a failure is logged, never thrown.
 */
export async function recordToolTime(
  deps: Pick<ToolCallDeps, "usage" | "now" | "warn">,
  ref: SessionRef,
  startedMs: number,
): Promise<void> {
  try {
    await deps.usage?.recordTool(ref.tenantId, {
      atMs: startedMs,
      ms: deps.now() - startedMs,
    });
  } catch (error) {
    deps.warn?.("the tool call's usage was not recorded", {
      sessionId: ref.sessionId,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** The call as the model made it, read from its assistant entry. */
export async function toolCallOf(
  store: Pick<SessionStore, "getEntry">,
  input: Pick<ExecuteToolInput, "tenantId" | "sessionId" | "assistantSeq" | "toolCallId">,
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

function resultOf(entry: SessionEntry, expectedId: string): ToolResultMessage {
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

/** The `execute_tool` span's attributes (GenAI conventions, Keel's replay class). */
function spanAttributes(call: ToolCallAttempt): Attributes {
  return {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": call.toolName,
    "gen_ai.tool.call.id": call.toolCallId,
    "keel.tool.replay_class": replayClassOf(call),
    "temporal.activity.attempt": call.attempt,
    ...(call.mcp ? { "keel.tool.mcp_tool": call.mcp.tool } : {}),
  };
}

/** Ends the call's span with its result (or the error that ended it) and records its duration. */
function endToolSpan(
  span: Span,
  call: ToolCallAttempt,
  ended: { result: ExecuteToolResult } | { error: unknown },
  seconds: number,
  endTime?: Date,
): void {
  let outcome = "exception";
  if ("result" in ended) {
    const { result } = ended;
    outcome = result.isError ? `${result.outcome}_error` : result.outcome;
    span.setAttribute("keel.tool.outcome", result.outcome);
    span.setAttribute("keel.tool.is_error", result.isError);
    if (result.isError) span.setStatus({ code: SpanStatusCode.ERROR });
  } else {
    span.recordException(ended.error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end(endTime);
  keelInstruments().toolDuration.record(seconds, {
    "gen_ai.tool.name": call.toolName,
    "keel.tool.outcome": outcome,
    "keel.tool.replay_class": replayClassOf(call),
  });
}

/**
 * Runs an attempt inside the call's `execute_tool` span (the worker: the span is active, so what
 * the attempt does nests under it); its duration is the attempt's. Call only with telemetry on.
 */
export function tracedToolCall(
  call: ToolCallAttempt,
  run: () => Promise<ExecuteToolResult>,
): Promise<ExecuteToolResult> {
  const started = performance.now();
  return keelTracer().startActiveSpan(
    `execute_tool ${call.toolName}`,
    { attributes: spanAttributes(call) },
    async (span) => {
      const seconds = () => (performance.now() - started) / 1000;
      try {
        const result = await run();
        endToolSpan(span, call, { result }, seconds());
        return result;
      } catch (error) {
        endToolSpan(span, call, { error }, seconds());
        throw error;
      }
    },
  );
}

/**
 * The span and metric of a call whose lifecycle spanned several requests (a runner's: from the
 * claim to the result), made when it ended. Its own trace: the API takes the call's task without
 * the trace context the workflow scheduled it with, so `attributes` say whose call it was. Does
 * nothing with telemetry off.
 */
export function recordToolCall(
  call: ToolCallAttempt,
  result: ExecuteToolResult,
  fromMs: number,
  toMs: number,
  attributes: Attributes,
): void {
  if (!instrumentation()) return;
  const span = keelTracer().startSpan(`execute_tool ${call.toolName}`, {
    root: true,
    // Dates: a plain number small enough is read as a `performance.now()` time.
    startTime: new Date(fromMs),
    attributes: { ...spanAttributes(call), ...attributes },
  });
  endToolSpan(span, call, { result }, Math.max(0, toMs - fromMs) / 1000, new Date(toMs));
}
