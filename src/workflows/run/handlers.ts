/**
 * The run's message handlers: deliverMessage, abort, approve and budget (signals), deliver and abortRun
 * (updates), state, events, delivery and abortState (queries). Whoever sends them — the API, a chat integration, the Temporal CLI — the
 * payload is checked here; the updates refuse bad input with a typed failure, the signals ignore
 * what they cannot use and log why.
 */
import { ApplicationFailure, currentUpdateInfo, log, setHandler, workflowInfo } from "@temporalio/workflow";
import {
  type AbortRequest,
  type AbortResult,
  type ApprovalDecision,
  DEFAULT_ABORT_REASON,
  type DeliverRequest,
  type DeliverResult,
  type DeliveryAnswer,
  type DeliverySignal,
} from "../../contracts/runs";
import { DeliveryRefusal } from "../../core/failure-types";
import { enqueue } from "../../core/queues";
import {
  abortSignal,
  abortStateQuery,
  abortUpdate,
  approveSignal,
  budgetSignal,
  deliverSignal,
  deliverUpdate,
  deliveryQuery,
  eventsQuery,
  mcpToolsQuery,
  stateQuery,
} from "../definitions";
import { applyBudget, parseBudgetRequest } from "./budget";
import type { RunContext } from "./context";
import { validateAbort, validateDelivery } from "./decide";
import { callState, queuedMessages } from "./state";
import {
  abortState,
  deliveredBefore,
  deliveryAnswer,
  eventsSince,
  rememberDelivery,
  stateAnswer,
} from "./views";

/** An approval as sent: `args` (the API's name) or `arguments` carry edited arguments. */
function parseApproval(input: unknown): ApprovalDecision | undefined {
  if (!input || typeof input !== "object") return undefined;
  const value = input as Record<string, unknown>;
  if (typeof value.toolCallId !== "string") return undefined;
  if (value.decision !== "approve" && value.decision !== "reject") return undefined;
  const edited = value.arguments ?? value.args;
  if (edited !== undefined && (typeof edited !== "object" || edited === null || Array.isArray(edited))) {
    return undefined;
  }
  return {
    toolCallId: value.toolCallId,
    decision: value.decision,
    ...(edited ? { arguments: edited as Record<string, unknown> } : {}),
    ...(typeof value.reason === "string" ? { reason: value.reason } : {}),
  };
}

export function registerHandlers(ctx: RunContext): void {
  const { run } = ctx;
  setHandler(deliverSignal, (input: unknown) => {
    run.signalsSeen += 1;
    const deliveryId = (input as Partial<DeliverySignal> | null)?.deliveryId;
    if (typeof deliveryId !== "string" || deliveryId === "") {
      log.warn("deliverMessage: ignored a message without a deliveryId to answer it by");
      return;
    }
    if (deliveredBefore(run, deliveryId)) return;
    const answer = applyDelivery(ctx, input);
    if (answer.refusal?.type === DeliveryRefusal.ended) {
      // Its sender may have been answered `pending` and would never learn of a refusal: the next
      // run starts with it (an update's sender is answered, and sends again).
      const { text } = input as DeliverySignal;
      run.late.push({ text, acceptedAt: run.clock.now() });
      rememberDelivery(run, deliveryId, {
        result: { delivery: "started", queueLength: run.late.length, handedOver: true },
      });
      return;
    }
    rememberDelivery(run, deliveryId, answer);
  });

  setHandler(
    deliverUpdate,
    (request: DeliverRequest): DeliverResult => {
      run.updatesSeen += 1;
      // Temporal answers a repeated update id itself within one execution; this covers the
      // execution a continue-as-new started (the client retried with the same id) and an id a
      // signal delivered first.
      const updateId = currentUpdateInfo()?.id;
      const earlier = deliveredBefore(run, updateId);
      const answer = earlier ?? applyDelivery(ctx, request);
      if (answer.refusal) throw ApplicationFailure.nonRetryable(answer.refusal.message, answer.refusal.type);
      if (!earlier) rememberDelivery(run, updateId, { result: answer.result });
      return answer.result;
    },
    {
      validator: (request: DeliverRequest) => {
        if (deliveredBefore(run, currentUpdateInfo()?.id)) return;
        const checked = validateDelivery(run, request);
        if (!checked.ok) throw ApplicationFailure.nonRetryable(checked.message, checked.type);
      },
    },
  );

  setHandler(abortSignal, (reason: unknown) => {
    run.signalsSeen += 1;
    if (run.ended) return;
    if (reason !== undefined && reason !== null && typeof reason !== "string") {
      log.warn("abort: the reason is not a string; aborting with the default reason", {
        reason: String(reason),
      });
    }
    beginAbort(ctx, typeof reason === "string" && reason.trim() ? reason : DEFAULT_ABORT_REASON);
  });

  setHandler(
    abortUpdate,
    (request: AbortRequest): AbortResult => {
      run.updatesSeen += 1;
      const checked = validateAbort(run, request);
      // The validator refused these already; the state cannot change between the two.
      if (!checked.ok) throw ApplicationFailure.nonRetryable(checked.message, checked.type);
      beginAbort(ctx, checked.reason);
      // Nothing drains a queue once an abort is set and deliveries are refused from then on, so
      // these are exactly the messages the run's end hands back.
      return { reason: run.abortReason ?? checked.reason, unprocessed: queuedMessages(run) };
    },
    {
      validator: (request: AbortRequest) => {
        const checked = validateAbort(run, request);
        if (!checked.ok) throw ApplicationFailure.nonRetryable(checked.message, checked.type);
      },
    },
  );

  setHandler(approveSignal, (input: unknown) => {
    run.signalsSeen += 1;
    const decision = parseApproval(input);
    if (!decision) {
      log.warn("approve: ignored a decision that is not {toolCallId, decision: approve|reject, args?}");
      return;
    }
    if (callState(run, decision.toolCallId) === "awaiting_approval")
      run.decisions.set(decision.toolCallId, decision);
  });

  setHandler(budgetSignal, (input: unknown) => {
    run.signalsSeen += 1;
    if (run.ended) return;
    const request = parseBudgetRequest(input);
    if (!request) {
      log.warn(
        "budget: ignored a request that is not {maxCostUsd?, maxTokens?: number ≥ 0, resume?: boolean}",
      );
      return;
    }
    applyBudget(run, request);
  });

  // The run this one continues, so a client holding its id can tell the session's run follows it.
  const previousRunId = workflowInfo().continuedFromExecutionRunId;
  setHandler(stateQuery, () => ({ ...stateAnswer(run), ...(previousRunId ? { previousRunId } : {}) }));
  setHandler(deliveryQuery, (deliveryId: string) => deliveryAnswer(run, deliveryId));
  setHandler(abortStateQuery, () => abortState(run));
  setHandler(eventsQuery, (afterSeq: number) => eventsSince(run, afterSeq));
  setHandler(mcpToolsQuery, () => run.mcpTools ?? null);
}

/**
 * Queues a delivery where `validateDelivery` says (starting or interrupting the run as it says),
 * or says why not. Never throws: a refusal is an answer.
 */
function applyDelivery(ctx: RunContext, request: unknown): DeliveryAnswer {
  const { run } = ctx;
  const checked = validateDelivery(run, request);
  if (!checked.ok) return { refusal: { type: checked.type, message: checked.message } };
  const { target } = checked;
  const queued = enqueue(run.queues[target.queue], { text: checked.text, acceptedAt: run.clock.now() });
  if (!queued.ok) return { refusal: { type: DeliveryRefusal.queueFull, message: "the queue is full" } };
  run.queues[target.queue] = queued.queue;
  if (target.outcome === "started") run.begun = true;
  if (target.outcome === "interrupted" && ctx.inFlight && !run.cancelling) {
    run.cancelling = { kind: "interrupt" };
    ctx.inFlight.cancel();
  }
  return { result: { delivery: target.outcome, queueLength: queued.queue.items.length } };
}

/** Starts aborting the run (once: a later abort keeps the first reason) and cancels in-flight work. */
function beginAbort(ctx: RunContext, reason: string): void {
  const { run } = ctx;
  if (run.abortReason !== undefined) return;
  run.abortReason = reason;
  if (ctx.inFlight) {
    run.cancelling = { kind: "abort", reason };
    ctx.inFlight.cancel();
  }
}
