/** Signals, updates and queries of the run workflow: the names clients and the workflow share. */

import { defineQuery, defineSignal, defineUpdate } from "@temporalio/workflow";
import type {
  AbortRequest,
  AbortResult,
  AbortState,
  ApprovalDecision,
  BudgetRequest,
  DeliverRequest,
  DeliverResult,
  DeliveryAnswer,
  DeliverySignal,
  RunState,
} from "../contracts/runs";
import type { AgentEvent } from "../core/events";
import type { McpToolList } from "../mcp/types";

/**
 * Delivers a user message to a live run. The run records how it took it (or why it refused it)
 * under the signal's `deliveryId`, read back with `deliveryQuery`; a repeated id is not applied
 * twice. Clients deliver to a live run this way, never by update: an update that reaches a run
 * while its worker is dead can leave a history the SDK cannot replay (docs/architecture.md).
 */
export const deliverSignal = defineSignal<[DeliverySignal]>("deliverMessage");
/** How the run took the delivery with this id; null while it has not seen it. */
export const deliveryQuery = defineQuery<DeliveryAnswer | null, [string]>("delivery");
/**
 * Delivers a user message; answers how it was delivered, or fails with a typed refusal. Clients
 * send it only with the run's start (update-with-start); the handler stays for other senders and
 * for histories that carry it.
 */
export const deliverUpdate = defineUpdate<DeliverResult, [DeliverRequest]>("deliver");
/** Cancels in-flight work, closes every open tool call and ends the run as aborted. */
export const abortSignal = defineSignal<[string]>("abort");
/** Whether the run is stopping, with the reason and the messages it will not read. */
export const abortStateQuery = defineQuery<AbortState>("abortState");
/**
 * The abort as an update: does what `abortSignal` does, refuses an invalid reason or an ended run
 * with a typed failure (`AbortRefusal`), and answers with the messages the run will not read.
 * Clients send the signal and read `abortStateQuery` instead (see `deliverSignal`); the handler
 * stays for other senders and for histories that carry it.
 */
export const abortUpdate = defineUpdate<AbortResult, [AbortRequest]>("abortRun");
export const approveSignal = defineSignal<[ApprovalDecision]>("approve");
/**
 * Changes the run's budgets and, with `resume`, lets a paused run go on past the budget it reached
 * (run/budget.ts). A signal like abort: recorded by the server with every worker down; the state
 * query shows its effect (`budget`, `status`, `pause`).
 */
export const budgetSignal = defineSignal<[BudgetRequest]>("budget");
export const stateQuery = defineQuery<RunState>("state");
/** Buffered events with a sequence number greater than the argument (oldest first). */
export const eventsQuery = defineQuery<AgentEvent[], [number]>("events");

/** Items of the run's stream from an offset (from the oldest kept when that one is gone). */
export interface StreamPage {
  items: Array<{ offset: number; topic: string; data: unknown }>;
  /** Ask from here next time. */
  nextOffset: number;
  /** More items are ready now (the page was full). */
  more: boolean;
}
export const streamQuery = defineQuery<StreamPage, [number]>("stream");
/** The MCP tool list the run recorded at its start (null: the run has no MCP servers, or has not listed yet). */
export const mcpToolsQuery = defineQuery<McpToolList | null>("mcpTools");

export { DeliveryRefusal } from "../core/failure-types";
