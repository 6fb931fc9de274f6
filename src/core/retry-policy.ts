/**
 * The retry policy of model calls (llmTurn, compaction, branch summaries), in one place: the run
 * workflow gives it to Temporal, and the activities use it to raise a server's `retry-after` to at
 * least the backoff (a persistent 429 with `retry-after: 1` must not burn every attempt in seconds).
 */
export const LLM_RETRY = {
  initialIntervalMs: 2_000,
  backoffCoefficient: 2,
  maximumIntervalMs: 60_000,
  /**
   * 8 attempts = 7 waits of 2+4+8+16+32+60+60 s ≈ 3 minutes before a run gives up on a provider
   * error: the activity fails for good when an attempt from the 8th on ends with one.
   */
  maximumAttempts: 8,
  /**
   * Attempts in all, the policy Temporal is given. Attempts a lost worker ended (killed,
   * redeployed, out of memory: a heartbeat timeout) count too, so a storm of worker losses does not
   * fail the run where a provider error would not have; the bound still ends a call that takes
   * down every worker it runs on (about half an hour of waits).
   */
  maximumAttemptsWithLostWorkers: 30,
} as const;

/** The policy's delay after attempt `attempt` (1-based) failed. */
export function backoffMs(attempt: number): number {
  const delay = LLM_RETRY.initialIntervalMs * LLM_RETRY.backoffCoefficient ** Math.max(0, attempt - 1);
  return Math.min(delay, LLM_RETRY.maximumIntervalMs);
}
