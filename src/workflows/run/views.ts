/**
 * What the run shows and hands on: the `state` and `events` queries' answers, the state carried
 * into a continue-as-new, and the deliveries remembered by id. Pure, like `state.ts`.
 */

import type {
  AbortState,
  CarriedState,
  DeliveryAnswer,
  RecentDelivery,
  RunState,
} from "../../contracts/runs";
import { TASK_TOOL_NAME } from "../../core/agents";
import { eventsAfter } from "../../core/events";
import { findMcpTool } from "../../mcp/tool-names";
import { callState, openCalls, queuedMessages, RECENT_DELIVERIES_KEPT, type RunRecord } from "./state";

/** What a continuation of this run (continue-as-new) starts from: small by construction. */
export function carry(run: RunRecord): CarriedState {
  if (!run.cursor) throw new Error("session not opened");
  return {
    cursor: run.cursor,
    turn: run.turn,
    ...(run.subAgentTurns > 0 ? { subAgentTurns: run.subAgentTurns } : {}),
    next: run.next,
    needsModel: run.needsModel,
    contextTokens: run.contextTokens,
    contextWindow: run.contextWindow,
    toolCallCount: run.toolCallCount,
    usage: run.usage,
    steering: run.queues.steering.items,
    followUp: run.queues.followUp.items,
    pending: run.queues.pending.items,
    nextEventSeq: run.events.nextSeq,
    emptyResponses: run.emptyResponses,
    recentDeliveries: run.recentDeliveries,
    ...(run.mcpTools ? { mcpTools: run.mcpTools } : {}),
    ...(run.tenantBudget ? { tenantBudget: run.tenantBudget } : {}),
    ...(run.activeModel !== undefined ? { activeModel: run.activeModel } : {}),
    ...(run.webhookEvents ? { webhookEvents: run.webhookEvents } : {}),
  };
}

/** The answer already given to the delivery with this id (update id or signal delivery id), if remembered. */
export function deliveredBefore(run: RunRecord, deliveryId: string | undefined): RecentDelivery | undefined {
  return deliveryId === undefined
    ? undefined
    : run.recentDeliveries.find((delivery) => delivery.updateId === deliveryId);
}

export function rememberDelivery(
  run: RunRecord,
  deliveryId: string | undefined,
  answer: DeliveryAnswer,
): void {
  if (deliveryId === undefined) return;
  run.recentDeliveries = [...run.recentDeliveries, { updateId: deliveryId, ...answer }].slice(
    -RECENT_DELIVERIES_KEPT,
  );
}

/** The `delivery` query's answer: null while the run has not seen (or no longer remembers) the id. */
export function deliveryAnswer(run: RunRecord, deliveryId: string): DeliveryAnswer | null {
  const earlier = deliveredBefore(run, deliveryId);
  if (earlier?.result) return { result: earlier.result };
  if (earlier?.refusal) return { refusal: earlier.refusal };
  return null;
}

/** The `abortState` query's answer (an abort's reason wins over the end it caused). */
export function abortState(run: RunRecord): AbortState {
  if (run.abortReason !== undefined) {
    return { kind: "aborting", reason: run.abortReason, unprocessed: queuedMessages(run) };
  }
  return run.ended ? { kind: "ended" } : { kind: "running" };
}

/** The `state` query's answer. */
export function stateAnswer(run: RunRecord): RunState {
  return {
    status: run.status,
    turn: run.turn,
    toolCallCount: run.toolCallCount,
    leafId: run.cursor?.leafId ?? null,
    nextSeq: run.cursor?.nextSeq ?? 0,
    usage: run.usage,
    queues: {
      steering: run.queues.steering.items.length,
      followUp: run.queues.followUp.items.length,
    },
    pendingToolCalls: openCalls(run).map((call) => ({
      toolCallId: call.summary.id,
      name: call.summary.name,
      state: callState(run, call.summary.id) ?? "pending",
      argumentsPreview: call.summary.argumentsPreview,
      ranOn: callPlace(run, call.summary.name),
    })),
    lastAssistantText: run.lastAssistantText.slice(0, 2_000),
    endReason: run.endReason,
    ...(run.error ? { error: run.error } : {}),
    ...(run.pause ? { pause: run.pause } : {}),
    budget: { maxCostUsd: run.settings.limits.maxCostUsd, maxTokens: run.settings.limits.maxTokens ?? 0 },
    lastEventSeq: run.events.nextSeq - 1,
  };
}

export function eventsSince(run: RunRecord, afterSeq: number) {
  return eventsAfter(run.events, afterSeq).events;
}

/** The runner environment the run's tools go to, or undefined for the workspace's worker. */
export function runnerEnvironment(run: RunRecord): string | undefined {
  const environment = run.settings.environment;
  return environment === undefined || environment === "worker" ? undefined : environment;
}

/**
 * Where a call of tool `name` runs (the events' `ranOn`, the state's pending calls): `sub-agent`
 * for `task`, `mcp:<server>` for an MCP tool (on the worker that listed it; `mcp:<server>@<env>` on
 * the runner environment's), else the run's runner environment or `worker`.
 */
export function callPlace(run: RunRecord, name: string): string {
  if (name === TASK_TOOL_NAME) return "sub-agent";
  const mcp = findMcpTool(run.mcpTools, name);
  const environment = runnerEnvironment(run);
  if (mcp) return environment === undefined ? `mcp:${mcp.server}` : `mcp:${mcp.server}@${environment}`;
  return environment ?? "worker";
}
