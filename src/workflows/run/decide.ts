/**
 * The run's decisions, as pure functions of its state and of what an activity reported: what
 * opens a turn, what follows a model answer, whether the run stops after a turn, when to compact
 * and when to continue as new. No Temporal API, no I/O: every branch is unit-tested without a
 * server, and a replay makes the same decisions.
 */
import type { LlmTurnResult } from "../../contracts/activities";
import {
  ABORT_REASON_PATTERN,
  DEFAULT_ABORT_REASON,
  DELIVERY_MODES,
  type DeliverRequest,
  type DeliverResult,
  type DeliveryMode,
  MAX_ABORT_REASON_CHARS,
  type QueuedMessage,
} from "../../contracts/runs";
import { AbortRefusal, DeliveryRefusal } from "../../core/failure-types";
import { decideDelivery, type LiveRunDeliveryMode } from "../../core/queues";
import { shouldCompact } from "../../core/tokens";
import {
  type NextTurnSettings,
  nextTurnSettings,
  type RunHooks,
  stopReasonAfterTurn,
  type TurnOutcome,
} from "../hooks";
import { budgetReached } from "./budget";
import { type QueueName, type RunRecord, take } from "./state";

/** Signals and updates accepted before continuing as new, below Temporal's per-run caps (10k / 2k). */
export const MAX_SIGNALS_PER_EXECUTION = 9_000;
const MAX_UPDATES_PER_EXECUTION = 1_800;

/** What happens at a turn boundary. */
export type TurnStart =
  /** An abort arrived: close the session and end. */
  | { kind: "abort" }
  /** Nothing to do: once in-flight handlers settle, the run ends unless a message arrived. */
  | { kind: "idle" }
  | { kind: "finish"; reason: string }
  /** The history is long enough: hand over to a fresh execution, which reads the queues as they are. */
  | { kind: "continue_as_new" }
  /** Start a turn; `takeTurnInputs(run, source)` takes its user messages. */
  | { kind: "turn"; source: TurnSource };

/**
 * Where a turn's user messages come from: pending and steering (none when only tool results wait
 * for the model), or the follow-ups, read only when the agent would otherwise stop.
 */
export type TurnSource = "queued" | "followUp";

/**
 * Decides what happens at a turn boundary without taking anything: a run that finishes or
 * continues as new leaves every queued message where it is, so `finish` hands back all of them
 * and the next execution reads them. Only a `turn` takes its inputs (`takeTurnInputs`).
 */
export function decideTurnStart(run: RunRecord, continueAsNewSuggested: boolean): TurnStart {
  if (run.abortReason !== undefined) return { kind: "abort" };
  const { pending, steering, followUp } = run.queues;
  const source: TurnSource | undefined =
    pending.items.length > 0 || steering.items.length > 0 || run.needsModel
      ? "queued"
      : followUp.items.length > 0
        ? "followUp"
        : undefined;
  if (source === undefined) return { kind: "idle" };
  const { limits } = run.settings;
  if (run.turn + run.subAgentTurns >= limits.maxTurns) {
    const counted = run.subAgentTurns > 0 ? `, ${run.subAgentTurns} of them its sub-agents'` : "";
    return { kind: "finish", reason: `turn limit reached (${limits.maxTurns}${counted})` };
  }
  if (
    continueAsNewSuggested ||
    run.turn - run.turnAtStart >= limits.turnsPerExecution ||
    run.signalsSeen > MAX_SIGNALS_PER_EXECUTION ||
    run.updatesSeen > MAX_UPDATES_PER_EXECUTION
  ) {
    return { kind: "continue_as_new" };
  }
  return { kind: "turn", source };
}

/** Takes the messages that open a turn `decideTurnStart` decided on (pending, then steering). */
export function takeTurnInputs(run: RunRecord, source: TurnSource): QueuedMessage[] {
  return source === "followUp" ? take(run, "followUp") : [...take(run, "pending"), ...take(run, "steering")];
}

/** The context is near the window: compact before the next model call. */
export function compactionDue(run: RunRecord): boolean {
  const { compaction } = run.settings;
  return (
    compaction.enabled &&
    run.contextWindow > 0 &&
    shouldCompact(run.contextTokens, run.contextWindow, compaction.reserveTokens)
  );
}

/** What follows a model call that returned (a cancelled or failed call never gets here). */
export type AfterModel =
  | { kind: "fail"; reason: string }
  /** The context overflowed (the failed call is stored at its slot): compact and ask again (once). */
  | { kind: "compact_and_retry" }
  /** An empty answer: nudge the model with a user message and take another turn. */
  | { kind: "nudge" }
  | { kind: "run_tools" }
  /** A text answer: the turn is over and the model is owed nothing. */
  | { kind: "answered" };

export function decideAfterModel(run: RunRecord, result: LlmTurnResult): AfterModel {
  if (result.errorKind === "context_overflow") {
    if (run.overflowRetried || !run.settings.compaction.enabled) {
      return {
        kind: "fail",
        reason: `context overflow: ${result.errorMessage ?? "the model's context window is full"}`,
      };
    }
    return { kind: "compact_and_retry" };
  }
  if (result.errorKind === "non_retryable") {
    return { kind: "fail", reason: `model error: ${result.errorMessage ?? "unknown"}` };
  }
  if (result.toolCalls.length === 0 && !result.textPreview.trim()) {
    const empty = run.emptyResponses + 1;
    if (empty > run.settings.maxEmptyResponses) {
      return { kind: "fail", reason: `the model returned ${empty} empty responses in a row` };
    }
    return { kind: "nudge" };
  }
  return result.toolCalls.length > 0 ? { kind: "run_tools" } : { kind: "answered" };
}

/**
 * After a turn's tool calls: end the run (with why) or go on with these model settings. A budget
 * reached, the run's or its tenant's (`budget_reached`), ends a run whose code predates pausing and a sub-agent's run;
 * any other run goes on to the next turn boundary, where it pauses if it has more to do.
 */
export type AfterTurn =
  | { kind: "finish"; reason: string }
  | { kind: "budget_reached"; reason: string; next: NextTurnSettings }
  | { kind: "continue"; next: NextTurnSettings };

export function decideAfterTurn(run: RunRecord, hooks: readonly RunHooks[], outcome: TurnOutcome): AfterTurn {
  const stop = stopReasonAfterTurn(hooks, outcome);
  if (stop) return { kind: "finish", reason: stop };
  const { limits } = run.settings;
  if (run.toolCallCount >= limits.maxToolCalls && run.needsModel) {
    return { kind: "finish", reason: `tool call limit reached (${limits.maxToolCalls})` };
  }
  if (limits.maxCostUsd > 0 && run.usage.cost.unpriced) {
    // A budget that cannot be checked is not silently ignored: the run stops before it overspends.
    return {
      kind: "finish",
      reason: `cost budget ($${limits.maxCostUsd}) cannot be checked: the model has no known prices`,
    };
  }
  const next = nextTurnSettings(hooks, outcome, run.next);
  const reached = budgetReached(run);
  if (reached?.type === "runBudget") {
    const limit =
      reached.budget === "cost"
        ? `cost budget reached ($${reached.limit})`
        : `token budget reached (${reached.limit})`;
    return { kind: "budget_reached", reason: limit, next };
  }
  if (reached?.type === "tenantBudget") return { kind: "budget_reached", reason: reached.message, next };
  return { kind: "continue", next };
}

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
  const decision = decideDelivery(mode === "auto" ? "steer" : (mode as LiveRunDeliveryMode), run.begun);
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

const ABORT_REASON = new RegExp(ABORT_REASON_PATTERN);

/**
 * Checks an abort (the `abortRun` update's argument) against the run's state: the reason, when
 * given, is a string of 1..MAX_ABORT_REASON_CHARS characters that is not blank; the run has not
 * ended. A run already aborting accepts it (the first reason stands). Pure: the update's validator
 * and handler both use it.
 */
export function validateAbort(
  run: RunRecord,
  request: unknown,
): { ok: true; reason: string } | { ok: false; type: string; message: string } {
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    return { ok: false, type: AbortRefusal.invalid, message: "the abort request is not an object" };
  }
  const { reason } = request as { reason?: unknown };
  if (
    reason !== undefined &&
    (typeof reason !== "string" || reason.length > MAX_ABORT_REASON_CHARS || !ABORT_REASON.test(reason))
  ) {
    return {
      ok: false,
      type: AbortRefusal.invalid,
      message: `the reason must be a non-blank string of at most ${MAX_ABORT_REASON_CHARS} characters`,
    };
  }
  if (run.ended) {
    return { ok: false, type: AbortRefusal.ended, message: "the run has already ended" };
  }
  return { ok: true, reason: reason ?? DEFAULT_ABORT_REASON };
}
