/**
 * Retries of model calls (llmTurn, compaction, branch summaries). A server's `retry-after`
 * raises the delay before the next attempt but never shortens it below the backoff: a
 * persistent 429 with `retry-after: 1` must not burn every attempt in seconds.
 * The policy itself is core's `LLM_RETRY`, which the run workflow gives to Temporal.
 *
 * A call gives up after `LLM_RETRY.maximumAttempts` provider errors, counted across its attempts;
 * attempts a lost worker ended do not count (Temporal's own bound,
 * `maximumAttemptsWithLostWorkers`, covers those). The count travels from one attempt to the
 * next in the activity's heartbeat details: Temporal hands an attempt's last heartbeat details to
 * the next attempt, also when it failed, and an attempt records its provider error there before
 * it fails.
 */
import { ApplicationFailure, type Context } from "@temporalio/activity";
import type { ModelCallFailureDetails } from "../contracts/activities";
import { FailureType } from "../core/failure-types";
import { backoffMs, LLM_RETRY } from "../core/retry-policy";
import { failoverReasonOf } from "../providers/errors";
import type { ProviderError } from "../providers/types";

/**
 * Delay before the attempt after `attempt`: the larger of the backoff and the server's
 * requested delay, or undefined (the policy's own backoff) when the server asked for none.
 */
export function nextRetryDelayMs(attempt: number, retryAfterMs: number | undefined): number | undefined {
  return retryAfterMs === undefined ? undefined : Math.max(retryAfterMs, backoffMs(attempt));
}

/** What a model-call attempt passes on to the next in its heartbeat details. */
export interface ModelCallTally {
  /** Provider errors that ended earlier attempts of this call. */
  providerErrors: number;
}

/**
 * The tally earlier attempts left: zero on a first attempt, after attempts that only lost their
 * worker, or when the details hold no tally (an attempt run by an older worker).
 */
export function tallyBefore(ctx: Context): ModelCallTally {
  const details: unknown = ctx.info.heartbeatDetails;
  const count =
    typeof details === "object" && details !== null ? Reflect.get(details, "providerErrors") : undefined;
  return {
    providerErrors: typeof count === "number" && Number.isSafeInteger(count) && count >= 0 ? count : 0,
  };
}

/**
 * The activity failure for a provider error: `RetryableLlmError` (retried by the policy, waiting
 * at least the server's `retry-after`; not retried once the call has had
 * `LLM_RETRY.maximumAttempts` provider errors, this one included) or `NonRetryableLlmError`.
 * `attempt` (Temporal's) sets the backoff; `providerErrors` (this one included) where the call stops.
 * A call that `canFailOver` also stops when its model's circuit breaker (at its endpoint) is open. The details
 * say whether the run may fail over (`ModelCallFailureDetails`).
 */
export function llmFailure(
  message: string,
  error: ProviderError,
  attempt: number,
  providerErrors: number,
  canFailOver = false,
): ApplicationFailure {
  if (error.kind !== "retryable") {
    return ApplicationFailure.create({ message, type: FailureType.nonRetryableLlm, nonRetryable: true });
  }
  const failover = failoverReasonOf(error);
  const details: ModelCallFailureDetails[] = [failover ? { failover } : {}];
  // With another model to go to, a model its breaker calls down (at its endpoint) is not asked again.
  const giveUp = providerErrors >= LLM_RETRY.maximumAttempts || (canFailOver && error.breaker !== undefined);
  if (giveUp) {
    return ApplicationFailure.create({
      message,
      type: FailureType.retryableLlm,
      nonRetryable: true,
      details,
    });
  }
  return ApplicationFailure.create({
    message,
    type: FailureType.retryableLlm,
    nextRetryDelay: nextRetryDelayMs(attempt, error.retryAfterMs),
    details,
  });
}

/**
 * Ends the current attempt of a model call on a provider error: returns the failure to throw and,
 * when the call will be retried, records the error in the heartbeat details for the next attempt.
 * Temporal keeps the details the attempt sends last, so the record goes after every other
 * heartbeat of the attempt.
 */
export function providerErrorFailure(
  ctx: Context,
  carried: ModelCallTally,
  message: string,
  error: ProviderError,
  canFailOver = false,
): { failure: ApplicationFailure; tally: ModelCallTally } {
  const tally = { providerErrors: carried.providerErrors + 1 };
  const failure = llmFailure(message, error, ctx.info.attempt, tally.providerErrors, canFailOver);
  if (!failure.nonRetryable) ctx.heartbeat(tally);
  return { failure, tally };
}
