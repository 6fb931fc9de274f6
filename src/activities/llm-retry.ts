/**
 * Backoff of model calls (llmTurn, compaction, branch summaries). A server's `retry-after`
 * raises the delay before the next attempt but never shortens it below the backoff: a
 * persistent 429 with `retry-after: 1` must not burn every attempt in seconds.
 * The policy itself is core's `LLM_RETRY`, which the run workflow gives to Temporal.
 */
import { ApplicationFailure } from "@temporalio/activity";
import { FailureType } from "../core/failure-types";
import { backoffMs, LLM_RETRY } from "../core/retry-policy";
import type { ProviderError } from "../providers/types";

/**
 * Delay before the attempt after `attempt`: the larger of the backoff and the server's
 * requested delay, or undefined (the policy's own backoff) when the server asked for none.
 */
export function nextRetryDelayMs(attempt: number, retryAfterMs: number | undefined): number | undefined {
  return retryAfterMs === undefined ? undefined : Math.max(retryAfterMs, backoffMs(attempt));
}

/**
 * The activity failure for a provider error: `RetryableLlmError` (retried by the policy, waiting
 * at least the server's `retry-after`; from attempt `LLM_RETRY.maximumAttempts` on, not retried)
 * or `NonRetryableLlmError`. The policy allows more attempts than that for the ones lost workers
 * end (`LLM_RETRY.maximumAttemptsWithLostWorkers`): this is where provider errors stop.
 */
export function llmFailure(message: string, error: ProviderError, attempt: number): ApplicationFailure {
  if (error.kind !== "retryable") {
    return ApplicationFailure.create({ message, type: FailureType.nonRetryableLlm, nonRetryable: true });
  }
  if (attempt >= LLM_RETRY.maximumAttempts) {
    return ApplicationFailure.create({ message, type: FailureType.retryableLlm, nonRetryable: true });
  }
  return ApplicationFailure.create({
    message,
    type: FailureType.retryableLlm,
    nextRetryDelay: nextRetryDelayMs(attempt, error.retryAfterMs),
  });
}
