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

export { DeliveryRefusal } from "../core/failure-types";
