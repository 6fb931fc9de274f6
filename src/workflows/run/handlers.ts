/**
 * The run's message handlers: deliver (update), abort and approve (signals), state and events
 * (queries). Whoever sends them — the API, a chat integration, the Temporal CLI — the payload is
 * checked here; the update refuses bad input with a typed failure, the signals ignore what they
 * cannot use and log why.
 */
import { ApplicationFailure, log, setHandler } from "@temporalio/workflow";
import { decideDelivery, enqueue } from "../../core/queues";
import {
  abortSignal,
  approveSignal,
  DeliveryRefusal,
  deliverUpdate,
  eventsQuery,
  stateQuery,
} from "../definitions";
import type { ApprovalDecision, DeliverRequest, DeliverResult, DeliveryMode } from "../types";
import type { RunContext } from "./lifecycle";
import { callState, eventsSince, type QueueName, type RunRecord, snapshot } from "./state";

const DELIVERY_MODES: readonly DeliveryMode[] = ["auto", "steer", "followUp", "interrupt", "reject"];

/** Where a valid delivery goes. */
export type DeliveryTarget = { queue: QueueName; outcome: DeliverResult["delivery"] };

/**
 * Checks a delivery against the run's state and says where it goes, or why it is refused (the
 * failure type is one of `DeliveryRefusal`). Pure: the update's validator and handler both use it.
 */
export function validateDelivery(
  run: RunRecord,
  request: unknown,
): { ok: true; target: DeliveryTarget; text: string } | { ok: false; type: string; message: string } {
  const { text, mode } = (request ?? {}) as Partial<DeliverRequest>;
  if (typeof text !== "string" || text.trim() === "") {
    return { ok: false, type: DeliveryRefusal.invalid, message: "message text is empty or not a string" };
  }
  if (typeof mode !== "string" || !DELIVERY_MODES.includes(mode as DeliveryMode)) {
    return {
      ok: false,
      type: DeliveryRefusal.invalid,
      message: `mode must be one of ${DELIVERY_MODES.join(", ")} (got ${JSON.stringify(mode)})`,
    };
  }
  if (run.ended || run.abortReason !== undefined) {
    return {
      ok: false,
      type: DeliveryRefusal.ended,
      message: "the run has ended; send again to start a new one",
    };
  }
  // `auto` steers a live run; the first message of a run starts it.
  const decision = decideDelivery(
    mode === "auto" ? "steer" : (mode as Exclude<DeliveryMode, "auto">),
    run.begun,
  );
  if (decision.action === "refuse") {
    return { ok: false, type: DeliveryRefusal.busy, message: "the session is busy with a run" };
  }
  const target: DeliveryTarget =
    decision.action === "start_run"
      ? { queue: "pending", outcome: "started" }
      : decision.action === "interrupt"
        ? { queue: "pending", outcome: "interrupted" }
        : decision.queue === "followUp"
          ? { queue: "followUp", outcome: "queued" }
          : { queue: "steering", outcome: "steered" };
  const queue = run.queues[target.queue];
  if (queue.items.length >= queue.capacity) {
    return {
      ok: false,
      type: DeliveryRefusal.queueFull,
      message: `the queue is full (${queue.capacity} messages waiting)`,
    };
  }
  return { ok: true, target, text };
}

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
  setHandler(
    deliverUpdate,
    (request: DeliverRequest): DeliverResult => {
      run.updatesSeen += 1;
      const checked = validateDelivery(run, request);
      // The validator refused these already; the state cannot change between the two.
      if (!checked.ok) throw ApplicationFailure.nonRetryable(checked.message, checked.type);
      const { target } = checked;
      const queued = enqueue(run.queues[target.queue], { text: checked.text, acceptedAt: run.clock.now() });
      if (!queued.ok) throw ApplicationFailure.nonRetryable("the queue is full", DeliveryRefusal.queueFull);
      run.queues[target.queue] = queued.queue;
      if (target.outcome === "started") run.begun = true;
      if (target.outcome === "interrupted" && ctx.inFlight && !run.cancelling) {
        run.cancelling = { kind: "interrupt" };
        ctx.inFlight.cancel();
      }
      return { delivery: target.outcome, queueLength: queued.queue.items.length };
    },
    {
      validator: (request: DeliverRequest) => {
        const checked = validateDelivery(run, request);
        if (!checked.ok) throw ApplicationFailure.nonRetryable(checked.message, checked.type);
      },
    },
  );

  setHandler(abortSignal, (reason: unknown) => {
    run.signalsSeen += 1;
    if (run.ended || run.abortReason !== undefined) return;
    if (reason !== undefined && reason !== null && typeof reason !== "string") {
      log.warn("abort: the reason is not a string; aborting with the default reason", {
        reason: String(reason),
      });
    }
    run.abortReason = typeof reason === "string" && reason.trim() ? reason : "aborted by user";
    if (ctx.inFlight) {
      run.cancelling = { kind: "abort", reason: run.abortReason };
      ctx.inFlight.cancel();
    }
  });

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

  setHandler(stateQuery, () => snapshot(run));
  setHandler(eventsQuery, (afterSeq: number) => eventsSince(run, afterSeq));
}
