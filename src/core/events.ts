/**
 * Run events: what happened during an agent run, numbered by `seq` and kept in a bounded
 * buffer that clients read incrementally (`eventsAfter`). The buffer is plain data so a
 * workflow can hold it, answer queries from it and carry it across continue-as-new.
 */
import type { AgentMessage, StopReason, ToolResultMessage, Usage } from "./messages";
import type { ToolCallState } from "./tool-registry";

/** Events kept by default; older ones are dropped first (readers learn it through `missed`). */
const DEFAULT_EVENT_BUFFER_CAPACITY = 1_000;

/** How a run ends by itself, as its `agent_end` event and its result say. */
export const AGENT_END_STATUSES = ["completed", "aborted", "failed"] as const;
export type AgentEndStatus = (typeof AGENT_END_STATUSES)[number];

/** An event before it is numbered. */
export type AgentEventBody =
  | { type: "agent_start"; runId: string }
  | {
      type: "agent_end";
      status: AgentEndStatus;
      reason?: string;
      usage?: Usage;
      /** Messages the run accepted (queued) but ended without reading, oldest first. */
      unprocessed?: string[];
    }
  | { type: "turn_start"; turn: number }
  | { type: "turn_end"; turn: number; stopReason?: StopReason; errorMessage?: string }
  | { type: "message_start"; entryId: string; role: AgentMessage["role"] }
  | { type: "message_end"; entryId: string; role: AgentMessage["role"]; message?: AgentMessage }
  | {
      type: "tool_execution_start";
      toolCallId: string;
      toolName: string;
      args?: Record<string, unknown>;
      /** Where the call runs: `worker`, a runner environment's name, `mcp:<server>` (`mcp:<server>@<env>` on a runner), or `sub-agent`. */
      ranOn?: string;
    }
  | {
      type: "tool_execution_end";
      toolCallId: string;
      toolName: string;
      state: ToolCallState;
      isError: boolean;
      /** The stored result, when a client filled it in (the run never sends it: history stays small). */
      result?: ToolResultMessage;
    }
  | { type: "mcp_server_unavailable"; server: string; error: string }
  /** A server announced a changed tool list and was listed again: the model sees `tools` from the next turn. */
  | { type: "mcp_tools_changed"; server: string; tools: string[] }
  /** The run stopped at a turn boundary because a budget was reached; it waits until `until` (epoch ms). */
  | { type: "run_paused"; reason: { type: string; [field: string]: unknown }; message: string; until: number }
  /** A paused run goes on (its budget was raised, or someone resumed it), with these budgets (0 = none). */
  | { type: "run_resumed"; maxCostUsd: number; maxTokens: number }
  /**
   * The turn's call to `from` failed in a way retrying will not fix soon (`reason`: rate_limit,
   * overloaded, server_error, connection, circuit_open; `error` says what it answered) and the
   * turn goes to `to`. `to` back on the run's first model after its provider recovered has
   * `reason` `recovered`.
   */
  | { type: "model_fallback"; from: string; to: string; reason: string; error?: string }
  | { type: "compaction_start"; reason: "threshold" | "overflow"; tokensBefore: number }
  | { type: "compaction_end"; entryId?: string; tokensBefore: number; error?: string }
  | { type: "approval_requested"; toolCallId: string; toolName: string; args: Record<string, unknown> }
  | {
      type: "approval_resolved";
      toolCallId: string;
      /**
       * A person's decision (`rejected`), or the timeout's. Runs recorded before `rejected`
       * existed say `denied` for a rejection; readers treat both alike.
       */
      decision: "approved" | "rejected" | "denied" | "timed_out";
      editedArgs?: Record<string, unknown>;
    };

/**
 * One step of the assistant message being built (pi's `assistantMessageEvent` deltas): text,
 * thinking or tool-call-argument characters appended to the content block at `contentIndex`.
 * `reset` voids everything an earlier attempt of the same call streamed: a client drops what
 * it shows for the message and starts again, so a retried call is never shown twice. `cut`
 * ends the deltas of a message early (see below).
 */
export type AssistantMessageDelta =
  | { type: "text_delta" | "thinking_delta" | "toolcall_delta"; contentIndex: number; delta: string }
  | { type: "reset" }
  /** No more deltas for this message (the attempt's live budget is spent): its text comes with `message_end`. */
  | { type: "cut" };

/**
 * Live events: progress inside one activity, published while it runs. They are not numbered,
 * not kept in the event buffer and never stored in the session (the final message is); a client
 * that misses them still gets the `message_end` / `tool_execution_end` that follows.
 * `attempt` is the activity attempt that produced them.
 */
export type LiveEvent =
  | {
      type: "message_update";
      /** The assistant entry being built (the id `message_start` / `message_end` carry). */
      entryId: string;
      attempt: number;
      assistantMessageEvent: AssistantMessageDelta;
    }
  | {
      /**
       * The model call for `entryId` failed with a retryable error (rate limit, overload, server
       * error, network) and is tried again after `delayMs` (at least; the server may add its
       * own wait). Failures the activity cannot see (its worker died, a timeout) show as the
       * next attempt's `reset` only.
       */
      type: "retry";
      entryId: string;
      /** Temporal's attempt that failed (the `attempt` of its deltas). */
      attempt: number;
      /**
       * Provider errors this call has had, this one included. Attempts a lost worker ended do not
       * count, so this may be lower than `attempt`.
       */
      providerErrors: number;
      /** The call gives up when its provider errors reach this number. */
      maxAttempts: number;
      delayMs: number;
      /** The error's class and message, e.g. `HTTP 429: rate limited`. */
      error: string;
    }
  | {
      type: "tool_execution_update";
      toolCallId: string;
      toolName: string;
      attempt: number;
      /** The tool's output so far (its tail when long); each update replaces the previous one. */
      partial: string;
    };

/**
 * Topics of a run's stream (Temporal workflow streams): numbered run events, published by the
 * workflow as it emits them, and live events, published by activities.
 */
export const RUN_STREAM_TOPIC = { events: "events", live: "live" } as const;
/** A numbered event; `seq` starts at 1 and increases by one per event of a run. */
export type AgentEvent = AgentEventBody & { seq: number };

export interface EventBuffer {
  /** Retained events, oldest first. */
  events: AgentEvent[];
  /** The `seq` the next appended event gets. */
  nextSeq: number;
  capacity: number;
}

export function createEventBuffer(capacity = DEFAULT_EVENT_BUFFER_CAPACITY, nextSeq = 1): EventBuffer {
  if (!Number.isInteger(capacity) || capacity < 1)
    throw new RangeError(`event buffer capacity ${capacity} < 1`);
  return { events: [], nextSeq, capacity };
}

/** Number the event and append it; the oldest events go once the capacity is exceeded. */
export function appendEvent(
  buffer: EventBuffer,
  body: AgentEventBody,
): { buffer: EventBuffer; event: AgentEvent } {
  const event = { ...body, seq: buffer.nextSeq } as AgentEvent;
  const events = [...buffer.events, event];
  if (events.length > buffer.capacity) events.splice(0, events.length - buffer.capacity);
  return { buffer: { ...buffer, events, nextSeq: buffer.nextSeq + 1 }, event };
}

export interface EventsAfter {
  events: AgentEvent[];
  /** True when events after `afterSeq` were already dropped from the buffer. */
  missed: boolean;
  /** Pass this as `afterSeq` next time. */
  lastSeq: number;
}

/** Events with `seq > afterSeq`, at most `limit` of them, oldest first. */
export function eventsAfter(buffer: EventBuffer, afterSeq: number, limit = buffer.capacity): EventsAfter {
  const oldest = buffer.events[0]?.seq ?? buffer.nextSeq;
  const events = buffer.events.filter((event) => event.seq > afterSeq).slice(0, Math.max(0, limit));
  return {
    events,
    missed: afterSeq < oldest - 1,
    lastSeq: events[events.length - 1]?.seq ?? Math.max(afterSeq, oldest - 1),
  };
}
