/**
 * The run's state as one record, and the operations on it. Pure: no Temporal API, no I/O. The
 * workflow injects its deterministic clock and random source (`RunClock`), so these functions run
 * the same in a replay and in a unit test.
 */

import type { EntrySlot, ToolCallSummary } from "../../contracts/activities";
import type { TenantBudgetHold } from "../../contracts/pause";
import type {
  ApprovalDecision,
  QueuedMessage,
  RecentDelivery,
  RunError,
  RunInput,
  RunPause,
  RunSettings,
  RunStatus,
  SessionCursor,
  SessionRef,
} from "../../contracts/runs";
import {
  type AgentEvent,
  type AgentEventBody,
  appendEvent,
  createEventBuffer,
  type EventBuffer,
} from "../../core/events";
import { makeEntryId } from "../../core/ids";
import type { Usage } from "../../core/messages";
import { clearQueue, createQueue, drain, type MessageQueue, type QueueMode } from "../../core/queues";
import {
  emptyToolCallRegistry,
  registerToolCall,
  TERMINAL_TOOL_CALL_STATES,
  type ToolCallRegistry,
  type ToolCallState,
  transitionToolCall,
} from "../../core/tool-registry";
import { addUsage, emptyUsage } from "../../core/usage";
import type { McpToolList } from "../../mcp/types";
import type { NextTurnSettings } from "../hooks";

/** Deterministic sources of time and randomness (the workflow's own, or a test's). */
export interface RunClock {
  now(): number;
  random(): number;
}

/** Why the current in-flight work is being cancelled. */
type Cancelling = { kind: "abort"; reason: string } | { kind: "interrupt" };

/** A tool call of the current batch: what the model asked for and where its result goes. */
export interface BatchCall {
  summary: ToolCallSummary;
  slot: EntrySlot;
}

export type QueueName = "pending" | "steering" | "followUp";

/**
 * The limits a sub-agent's run gets out of its parent's (0: no cost or token budget), held by the
 * parent while the child runs (run/budget.ts, `childShare`).
 */
export interface ChildShare {
  maxCostUsd: number;
  maxTokens: number;
  maxTurns: number;
}

export interface RunRecord {
  readonly ref: SessionRef;
  /** The run's settings; a `budget` signal changes its limits (run/budget.ts). */
  settings: RunSettings;
  readonly clock: RunClock;
  status: RunStatus;
  /** A message started this run: later messages are steered, queued or refused. */
  begun: boolean;
  /** Where the next entry goes; undefined until the session is opened. */
  cursor?: SessionCursor;
  turn: number;
  /** Turns its sub-agents' runs took: they count against its turn limit with its own. */
  subAgentTurns: number;
  /**
   * What its sub-agents still running hold of its budgets, by their `task` call's result slot.
   * Not carried across continue-as-new, which comes at a turn boundary, after the batch's children ended.
   */
  childShares: { seq: number; share: ChildShare }[];
  /** Turn number when this execution started (turnsPerExecution counts from here). */
  readonly turnAtStart: number;
  toolCallCount: number;
  usage: Usage;
  emptyResponses: number;
  /** Model and thinking level of the next call; hooks may change them between turns. */
  next: NextTurnSettings;
  /**
   * The model the session is on: the one that last answered (or was switched to) in this run;
   * undefined until a failover switched it, when it is `next.model`.
   */
  activeModel?: string;
  /** Tool results are waiting for the model. */
  needsModel: boolean;
  /** Context size the model last reported, and its window (the compaction check needs both). */
  contextTokens: number;
  contextWindow: number;
  /** The last model call overflowed the context and was compacted: a second overflow fails. */
  overflowRetried: boolean;
  /** `pending` opens the next turn whatever the queue modes say (first prompt, interrupts, nudges). */
  queues: Record<QueueName, MessageQueue<QueuedMessage>>;
  events: EventBuffer;
  /** States of the current batch's tool calls: the one source of truth for call states. */
  calls: ToolCallRegistry;
  batch: BatchCall[];
  /** Tool calls of the current turn that ended in an error (for hooks). */
  failedToolCalls: number;
  decisions: Map<string, ApprovalDecision>;
  abortReason?: string;
  cancelling?: Cancelling;
  lastAssistantText: string;
  /** The worker holding the workspace runs tool processes without a sandbox (KEEL_SANDBOX=off). */
  unsandboxed: boolean;
  endReason?: string;
  /** Set while the run is paused at a budget (run/pause.ts). */
  pause?: RunPause;
  /** Set when an activity failed for good and ended the run. */
  error?: RunError;
  ended: boolean;
  signalsSeen: number;
  updatesSeen: number;
  /** The latest deliveries' answers by update id, oldest first (bounded, carried across continue-as-new). */
  recentDeliveries: RecentDelivery[];
  /** Messages delivered by signal after the run's end: the next run starts with them (`HandOver`). */
  late: QueuedMessage[];
  /** The MCP tools listed at the run's start (carried across continue-as-new); unset without servers. */
  mcpTools?: McpToolList;
  /** The tenant budget the last model call found used up; cleared when the tenant is under it again. */
  tenantBudget?: TenantBudgetHold;
  /** A resume asked the paused run to check its tenant's budget now (run/pause.ts). */
  recheckTenantBudget?: boolean;
  /** The webhook event types the tenant's endpoints take, learned when the session opened (carried). */
  webhookEvents?: string[];
  /** Where emitted events go besides the buffer (the run's stream); unset in pure tests. */
  publish?: (event: AgentEvent) => void;
}

/** Deliveries remembered by update id: enough for any client retrying within minutes. */
export const RECENT_DELIVERIES_KEPT = 100;

export function createRunRecord(input: RunInput, clock: RunClock): RunRecord {
  const { settings, carried, handedOver } = input;
  const queue = (mode: QueueMode, items: QueuedMessage[] = []) => ({
    ...createQueue<QueuedMessage>(mode, settings.queueLimit),
    items: [...items],
  });
  return {
    ref: { tenantId: input.tenantId, sessionId: input.sessionId },
    settings,
    clock,
    status: carried ? "running" : "starting",
    begun: carried !== undefined || (handedOver?.messages.length ?? 0) > 0,
    cursor: carried?.cursor,
    turn: carried?.turn ?? 0,
    turnAtStart: carried?.turn ?? 0,
    subAgentTurns: carried?.subAgentTurns ?? 0,
    childShares: [],
    toolCallCount: carried?.toolCallCount ?? 0,
    usage: carried?.usage ?? emptyUsage(),
    emptyResponses: carried?.emptyResponses ?? 0,
    next: carried?.next ?? { model: settings.model, thinkingLevel: settings.thinkingLevel },
    ...(carried?.activeModel !== undefined ? { activeModel: carried.activeModel } : {}),
    needsModel: carried?.needsModel ?? false,
    contextTokens: carried?.contextTokens ?? 0,
    contextWindow: carried?.contextWindow ?? 0,
    overflowRetried: false,
    queues: {
      pending: queue("all", carried?.pending ?? handedOver?.messages),
      steering: queue(settings.steeringMode, carried?.steering),
      followUp: queue(settings.followUpMode, carried?.followUp),
    },
    events: createEventBuffer(undefined, carried?.nextEventSeq ?? 1),
    calls: emptyToolCallRegistry(),
    batch: [],
    failedToolCalls: 0,
    decisions: new Map(),
    lastAssistantText: "",
    unsandboxed: false,
    ended: false,
    signalsSeen: 0,
    updatesSeen: 0,
    recentDeliveries: [...(carried?.recentDeliveries ?? handedOver?.deliveries ?? [])],
    ...(carried?.mcpTools ? { mcpTools: carried.mcpTools } : {}),
    ...(carried?.tenantBudget ? { tenantBudget: carried.tenantBudget } : {}),
    ...(carried?.webhookEvents ? { webhookEvents: carried.webhookEvents } : {}),
    late: [],
  };
}

export function emit(run: RunRecord, body: AgentEventBody): void {
  const { buffer, event } = appendEvent(run.events, body);
  run.events = buffer;
  run.publish?.(event);
}

/** Messages waiting in any queue. */
export function queuedCount(run: RunRecord): number {
  const { pending, steering, followUp } = run.queues;
  return pending.items.length + steering.items.length + followUp.items.length;
}

/** Drains a queue by its mode (pending always drains whole). */
export function take(run: RunRecord, name: QueueName): QueuedMessage[] {
  const { taken, queue } = drain(run.queues[name]);
  run.queues[name] = queue;
  return taken;
}

/** Adds a message to `pending` whatever its bound (nudges and carried inputs are the run's own). */
export function pushPending(run: RunRecord, messages: QueuedMessage[], atHead = false): void {
  const pending = run.queues.pending;
  const items = atHead ? [...messages, ...pending.items] : [...pending.items, ...messages];
  run.queues.pending = { ...pending, items };
}

const QUEUE_ORDER = ["pending", "steering", "followUp"] as const;

/** Every queued message a caller sent, in the order `takeAllQueued` hands them back; the queues are left as they are. */
export function queuedMessages(run: RunRecord): QueuedMessage[] {
  return QUEUE_ORDER.flatMap((name) => run.queues[name].items).filter((message) => !message.fromRun);
}

/** Empties every queue (the run ends without having read them); hands back what callers sent. */
export function takeAllQueued(run: RunRecord): QueuedMessage[] {
  const unread = queuedMessages(run);
  for (const name of QUEUE_ORDER) run.queues[name] = clearQueue(run.queues[name]).queue;
  return unread;
}

/** The next entry slot: sequence number, a fresh id (≥ 64 bits) and the leaf as parent. */
export function newSlot(run: RunRecord): EntrySlot {
  if (!run.cursor) throw new Error("session not opened");
  const slot: EntrySlot = {
    seq: run.cursor.nextSeq,
    id: makeEntryId(run.clock.random),
    parentId: run.cursor.leafId,
    timestamp: new Date(run.clock.now()).toISOString(),
  };
  run.cursor = { nextSeq: slot.seq + 1, leafId: slot.id };
  return slot;
}

/**
 * Makes the next slot a child of `parentId` again (a branch beside the slots taken after it),
 * keeping every sequence number taken so far: none is handed out twice.
 */
export function branchFrom(run: RunRecord, parentId: string | null): void {
  if (!run.cursor) throw new Error("session not opened");
  run.cursor = { nextSeq: run.cursor.nextSeq, leafId: parentId };
}

/** Hands back a slot that nothing was written at (it must be the last one taken). */
export function releaseSlot(run: RunRecord, slot: EntrySlot): void {
  run.cursor = { nextSeq: slot.seq, leafId: slot.parentId };
}

export function recordModelUsage(run: RunRecord, usage: Usage): void {
  run.usage = addUsage(run.usage, usage);
}

/** Holds `share` of the run's budgets for the sub-agent of the `task` call whose result goes at `seq`. */
export function holdShare(run: RunRecord, seq: number, share: ChildShare): void {
  run.childShares = [...run.childShares, { seq, share }];
}

/**
 * Gives back what the sub-agent of the call at `seq` held (nothing when it held nothing): done in
 * the same step as adding its usage and turns, so what it did not spend is the run's again.
 */
export function releaseShare(run: RunRecord, seq: number): void {
  run.childShares = run.childShares.filter((held) => held.seq !== seq);
}

/** Starts a tool batch: each call gets its slot in source order and the `pending` state. */
export function startBatch(run: RunRecord, summaries: ToolCallSummary[]): BatchCall[] {
  run.calls = emptyToolCallRegistry();
  run.batch = [];
  for (const summary of summaries) {
    const registered = registerToolCall(run.calls, summary.id, summary.name);
    // A provider may repeat an id inside one message; the call still gets its own slot and result.
    if (registered.ok) run.calls = registered.registry;
    run.batch.push({ summary, slot: newSlot(run) });
  }
  run.toolCallCount += summaries.length;
  return run.batch;
}

export function callState(run: RunRecord, toolCallId: string): ToolCallState | undefined {
  return run.calls.calls.find((record) => record.toolCallId === toolCallId)?.state;
}

/** Moves a call to `to`; an illegal move (out of a terminal state) changes nothing. */
export function moveCall(run: RunRecord, toolCallId: string, to: ToolCallState): void {
  const moved = transitionToolCall(run.calls, toolCallId, to);
  if (moved.ok) run.calls = moved.registry;
}

/** Calls of the current batch without a result yet. */
export function openCalls(run: RunRecord): BatchCall[] {
  return run.batch.filter((call) => {
    const state = callState(run, call.summary.id);
    return state !== undefined && !TERMINAL_TOOL_CALL_STATES.includes(state);
  });
}
