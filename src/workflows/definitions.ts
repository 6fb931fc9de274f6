/** Signals, updates and queries of the run workflow: the names clients and the workflow share. */
import { defineQuery, defineSignal, defineUpdate } from "@temporalio/workflow";
import type { AgentEvent } from "../core/events";
import type {
  AbortRequest,
  AbortResult,
  ApprovalDecision,
  DeliverRequest,
  DeliverResult,
  RunState,
} from "./types";

/** Delivers a user message; answers how it was delivered, or fails with a typed refusal. */
export const deliverUpdate = defineUpdate<DeliverResult, [DeliverRequest]>("deliver");
/** Cancels in-flight work, closes every open tool call and ends the run as aborted. */
export const abortSignal = defineSignal<[string]>("abort");
/**
 * The abort as an update: does what `abortSignal` does, refuses an invalid reason or an ended run
 * with a typed failure (`AbortRefusal`), and answers with the messages the run will not read.
 * The signal stays for senders that need no answer (chat integrations, older clients).
 */
export const abortUpdate = defineUpdate<AbortResult, [AbortRequest]>("abortRun");
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

export { AbortRefusal, DeliveryRefusal } from "../core/failure-types";
