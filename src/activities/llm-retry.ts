/**
 * Backoff of model calls (llmTurn, compaction, branch summaries). A server's `retry-after`
 * raises the delay before the next attempt but never shortens it below the backoff: a
 * persistent 429 with `retry-after: 1` must not burn every attempt in seconds.
 *
 * These numbers mirror the retry policy the run workflow gives its LLM activities
 * (`llmActivities` in src/workflows/agent-run.ts: 2 s, ×2, at most 1 min, 8 attempts); the
 * workflow should import {@link LLM_RETRY} instead of repeating them.
 */
import { ApplicationFailure } from "@temporalio/activity";
import type { ProviderError } from "../providers/types";

export const LLM_RETRY = {
  initialIntervalMs: 2_000,
  backoffCoefficient: 2,
  maximumIntervalMs: 60_000,
  /** 8 attempts = 7 waits of 2+4+8+16+32+60+60 s ≈ 3 minutes before a run gives up. */
  maximumAttempts: 8,
} as const;

/** The policy's delay after attempt `attempt` (1-based) failed. */
export function backoffMs(attempt: number): number {
  const delay = LLM_RETRY.initialIntervalMs * LLM_RETRY.backoffCoefficient ** Math.max(0, attempt - 1);
  return Math.min(delay, LLM_RETRY.maximumIntervalMs);
}

/**
 * Delay before the attempt after `attempt`: the larger of the backoff and the server's
 * requested delay, or undefined (the policy's own backoff) when the server asked for none.
 */
export function nextRetryDelayMs(attempt: number, retryAfterMs: number | undefined): number | undefined {
  return retryAfterMs === undefined ? undefined : Math.max(retryAfterMs, backoffMs(attempt));
}

/**
 * The activity failure for a provider error: `RetryableLlmError` (retried by the policy, waiting
 * at least the server's `retry-after`) or `NonRetryableLlmError`.
 */
export function llmFailure(message: string, error: ProviderError, attempt: number): ApplicationFailure {
  if (error.kind !== "retryable") {
    return ApplicationFailure.create({ message, type: "NonRetryableLlmError", nonRetryable: true });
  }
  return ApplicationFailure.create({
    message,
    type: "RetryableLlmError",
    nextRetryDelay: nextRetryDelayMs(attempt, error.retryAfterMs),
  });
}
