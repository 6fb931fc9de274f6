import { Context } from "@temporalio/activity";
import { MockActivityEnvironment } from "@temporalio/testing";
import { whileHeartbeating } from "../../../src/activities/heartbeat";
import {
  llmFailure,
  nextRetryDelayMs,
  providerErrorFailure,
  tallyBefore,
} from "../../../src/activities/llm-retry";
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

  it("a call stops at its 8th provider error, whatever attempt that is; lost attempts do not count", () => {
    const overloaded = { kind: "retryable", message: "overloaded", status: 529 } as const;
    const last = LLM_RETRY.maximumAttempts;
    expect(llmFailure("m", overloaded, last - 1, last - 1)).toMatchObject({
      type: FailureType.retryableLlm,
      nonRetryable: false,
    });
    // Attempt 12 after 5 attempts lost their worker: its 7th provider error is retried.
    expect(llmFailure("m", overloaded, 12, 7)).toMatchObject({ nonRetryable: false });
    for (const attempt of [last, last + 5])
      expect(llmFailure("m", overloaded, attempt, last)).toMatchObject({
        type: FailureType.retryableLlm,
        nonRetryable: true,
      });
    expect(LLM_RETRY.maximumAttemptsWithLostWorkers).toBeGreaterThan(2 * last);
    expect(
      llmFailure("m", { kind: "non_retryable", message: "bad request", status: 400 }, 1, 1),
    ).toMatchObject({
      type: FailureType.nonRetryableLlm,
      nonRetryable: true,
    });
  });
});

describe("the provider-error tally across attempts", () => {
  const overloaded = { kind: "retryable", message: "overloaded", status: 529 } as const;
  type Ended = ReturnType<typeof providerErrorFailure>;
  // The mock's `run` does not infer a function's result type.
  const runIn = (env: MockActivityEnvironment, fn: () => Promise<Ended>) => env.run(fn) as Promise<Ended>;

  it("reads the tally an earlier attempt left, and none from details without one", async () => {
    const read = (heartbeatDetails: unknown) =>
      new MockActivityEnvironment({ attempt: 3, heartbeatDetails }).run(async () =>
        tallyBefore(Context.current()),
      );
    expect(await read({ providerErrors: 2, phase: "waiting" })).toEqual({ providerErrors: 2 });
    for (const details of [undefined, { textChars: 10 }, { providerErrors: -1 }, { providerErrors: "2" }, 7])
      expect(await read(details)).toEqual({ providerErrors: 0 });
  });

  it("every heartbeat of an attempt carries the tally, and a retried failure records one more", async () => {
    const env = new MockActivityEnvironment({ attempt: 4, heartbeatTimeoutMs: 600 });
    const beats: unknown[] = [];
    env.on("heartbeat", (details: unknown) => beats.push(details));
    const attempt = async (): Promise<Ended> => {
      const ctx = Context.current();
      await whileHeartbeating(
        ctx,
        "waiting",
        async (progress) => {
          await new Promise((resolve) => setTimeout(resolve, 450));
          progress({ textChars: 5 });
        },
        { providerErrors: 2 },
      );
      return providerErrorFailure(ctx, { providerErrors: 2 }, "m", overloaded);
    };
    const { failure, tally } = await runIn(env, attempt);
    expect(tally).toEqual({ providerErrors: 3 });
    expect(failure.nonRetryable).toBe(false);
    // The timer's beats (every 200 ms: how many fit in the 450 ms depends on the machine's load),
    // the progress report, then the record: the last one counts.
    expect(beats.slice(-2)).toEqual([{ providerErrors: 2, textChars: 5 }, { providerErrors: 3 }]);
    const timerBeats = beats.slice(0, -2);
    expect(timerBeats.length).toBeGreaterThanOrEqual(1);
    for (const beat of timerBeats) expect(beat).toEqual({ providerErrors: 2, phase: "waiting" });
  });

  it("the last provider error is not recorded: there is no next attempt", async () => {
    const env = new MockActivityEnvironment({ attempt: 20 });
    const beats: unknown[] = [];
    env.on("heartbeat", (details: unknown) => beats.push(details));
    const lastError = async (): Promise<Ended> =>
      providerErrorFailure(
        Context.current(),
        { providerErrors: LLM_RETRY.maximumAttempts - 1 },
        "m",
        overloaded,
      );
    const { failure } = await runIn(env, lastError);
    expect(failure.nonRetryable).toBe(true);
    expect(beats).toEqual([]);
  });
});
