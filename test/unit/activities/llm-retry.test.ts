import { llmFailure, nextRetryDelayMs } from "../../../src/activities/llm-retry";
import { FailureType } from "../../../src/core/failure-types";
import { backoffMs, LLM_RETRY } from "../../../src/core/retry-policy";

describe("LLM retry delays", () => {
  it("a short retry-after never shortens the backoff", () => {
    expect(nextRetryDelayMs(1, 1_000)).toBe(2_000);
    expect(nextRetryDelayMs(3, 1_000)).toBe(8_000);
    expect(nextRetryDelayMs(7, 1_000)).toBe(60_000);
  });

  it("a long retry-after raises the delay", () => {
    expect(nextRetryDelayMs(1, 30_000)).toBe(30_000);
  });

  it("no retry-after leaves the policy's backoff in charge", () => {
    expect(nextRetryDelayMs(2, undefined)).toBeUndefined();
  });

  it("the attempts budget covers minutes: a persistent 429 with retry-after 1 s", () => {
    let waited = 0;
    for (let attempt = 1; attempt < LLM_RETRY.maximumAttempts; attempt++)
      waited += nextRetryDelayMs(attempt, 1_000)!;
    expect(waited).toBe(2_000 + 4_000 + 8_000 + 16_000 + 32_000 + 60_000 + 60_000);
    expect(backoffMs(50)).toBe(LLM_RETRY.maximumIntervalMs);
  });

  it("a provider error stops at the 8th attempt; only attempts lost workers end go beyond it", () => {
    const overloaded = { kind: "retryable", message: "overloaded", status: 529 } as const;
    const last = LLM_RETRY.maximumAttempts;
    expect(llmFailure("m", overloaded, last - 1)).toMatchObject({
      type: FailureType.retryableLlm,
      nonRetryable: false,
    });
    // Attempt 8, or a later one after workers were lost on the earlier ones: no more retries.
    for (const attempt of [last, last + 5])
      expect(llmFailure("m", overloaded, attempt)).toMatchObject({
        type: FailureType.retryableLlm,
        nonRetryable: true,
      });
    expect(LLM_RETRY.maximumAttemptsWithLostWorkers).toBeGreaterThan(2 * last);
    expect(llmFailure("m", { kind: "non_retryable", message: "bad request", status: 400 }, 1)).toMatchObject({
      type: FailureType.nonRetryableLlm,
      nonRetryable: true,
    });
  });
});
