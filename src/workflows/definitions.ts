/** Signals, updates and queries of the run workflow: the names clients and the workflow share. */
import { defineQuery, defineSignal, defineUpdate } from "@temporalio/workflow";
import type { AgentEvent } from "../core/events";
import type { ApprovalDecision, DeliverRequest, DeliverResult, RunState } from "./types";

/** Delivers a user message; answers how it was delivered, or fails with a typed refusal. */
export const deliverUpdate = defineUpdate<DeliverResult, [DeliverRequest]>("deliver");
/** Cancels in-flight work, closes every open tool call and ends the run as aborted. */
export const abortSignal = defineSignal<[string]>("abort");
export const approveSignal = defineSignal<[ApprovalDecision]>("approve");
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

export { DeliveryRefusal } from "../core/failure-types";
