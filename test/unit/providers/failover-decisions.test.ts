/**
 * The pure decisions of failover on the provider side: which errors fail over (and why), how an
 * outcome counts for a provider's circuit breaker, the breaker's transitions, and the activity
 * failure a provider error becomes when the run can fail over.
 */
import { llmFailure } from "../../../src/activities/llm-retry";
import { LLM_RETRY } from "../../../src/core/retry-policy";
import { breakerKeyOf, CircuitBreakers } from "../../../src/providers/circuit-breaker";
import { breakerOutcomeOf, classifyError, failoverReasonOf } from "../../../src/providers/errors";
import type { ProviderError } from "../../../src/providers/types";

/** An SDK error as the SDKs throw it for an HTTP status. */
const httpError = (status: number, message = `HTTP ${status}`) =>
  Object.assign(new Error(message), { status, headers: new Headers() });

describe("which errors fail over", () => {
  test.each([
    [429, "rate_limit"],
    [529, "overloaded"],
    [503, "overloaded"],
    [500, "server_error"],
    [502, "server_error"],
  ])("HTTP %i fails over as %s", (status, reason) => {
    expect(failoverReasonOf(classifyError(httpError(status)))).toBe(reason);
  });

  test("a connection failure or a cut stream fails over", () => {
    expect(failoverReasonOf(classifyError(new TypeError("fetch failed")))).toBe("connection");
  });

  test("a call the open breaker kept back fails over as circuit_open", () => {
    const skipped: ProviderError = { kind: "retryable", breaker: "open", message: "not sent" };
    expect(failoverReasonOf(skipped)).toBe("circuit_open");
    // A real failure that opened the breaker keeps its own reason.
    expect(failoverReasonOf({ kind: "retryable", status: 429, breaker: "opened", message: "x" })).toBe(
      "rate_limit",
    );
  });

  test.each([
    ["a refused request", httpError(400, "Invalid request")],
    ["a bad key", httpError(401, "invalid x-api-key")],
    ["a forbidden model", httpError(403)],
    ["an unknown model", httpError(404)],
    ["a context overflow", httpError(400, "prompt is too long: 215321 tokens > 200000 maximum")],
  ])("%s does not fail over", (_what, error) => {
    expect(failoverReasonOf(classifyError(error))).toBeUndefined();
  });

  test("an aborted call does not fail over", () => {
    const controller = new AbortController();
    controller.abort();
    expect(failoverReasonOf(classifyError(new Error("aborted"), controller.signal))).toBeUndefined();
  });

  test("only failover-class errors count against a provider's breaker; an abort counts for nothing", () => {
    expect(breakerOutcomeOf(undefined)).toBe("success");
    expect(breakerOutcomeOf(classifyError(httpError(529)))).toBe("failure");
    expect(breakerOutcomeOf(classifyError(httpError(401)))).toBe("success");
    expect(breakerOutcomeOf(classifyError(httpError(400, "prompt is too long")))).toBe("success");
    expect(breakerOutcomeOf({ kind: "aborted", message: "aborted" })).toBe("neutral");
  });
});

describe("a provider's circuit breaker", () => {
  const clock = { now: 0 };
  const breakers = () => new CircuitBreakers({ failures: 3, cooldownMs: 1_000 }, () => clock.now);
  beforeEach(() => {
    clock.now = 0;
  });

  test("opens after the set number of failures in a row; a success between them starts the count again", () => {
    const b = breakers();
    b.record("x", "failure");
    b.record("x", "failure");
    b.record("x", "success");
    b.record("x", "failure");
    b.record("x", "failure");
    expect(b.state("x")).toBe("closed");
    expect(b.admit("x")).toBe(true);
    b.record("x", "failure");
    expect(b.state("x")).toBe("open");
    expect(b.admit("x")).toBe(false);
    // Another endpoint is not affected.
    expect(b.admit("y")).toBe(true);
  });

  test("is kept per model: one model's failures leave another model at the same endpoint its calls", () => {
    const b = breakers();
    const url = "https://api.anthropic.com";
    const opus = breakerKeyOf("anthropic-messages", url, "claude-opus-4-1");
    const sonnet = breakerKeyOf("anthropic-messages", url, "claude-sonnet-4-5");
    expect(new Set([opus, sonnet, breakerKeyOf("openai-completions", url, "claude-opus-4-1")]).size).toBe(3);
    for (let i = 0; i < 3; i++) b.record(opus, "failure");
    expect(b.admit(opus)).toBe(false);
    expect(b.admit(sonnet)).toBe(true);
    expect(b.state(sonnet)).toBe("closed");
    // The same model at the same endpoint is one breaker, whatever else differs (the key).
    expect(breakerKeyOf("anthropic-messages", url, "claude-opus-4-1")).toBe(opus);
  });

  test("after the cooldown one probe goes through; its success closes the breaker", () => {
    const b = breakers();
    for (let i = 0; i < 3; i++) b.record("x", "failure");
    clock.now = 999;
    expect(b.admit("x")).toBe(false);
    clock.now = 1_000;
    expect(b.state("x")).toBe("half_open");
    expect(b.admit("x")).toBe(true);
    // One probe at a time.
    expect(b.admit("x")).toBe(false);
    b.record("x", "success");
    expect(b.state("x")).toBe("closed");
    expect(b.admit("x")).toBe(true);
  });

  test("a failed probe opens it for another cooldown", () => {
    const b = breakers();
    for (let i = 0; i < 3; i++) b.record("x", "failure");
    clock.now = 1_000;
    expect(b.admit("x")).toBe(true);
    b.record("x", "failure");
    expect(b.state("x")).toBe("open");
    clock.now = 1_999;
    expect(b.admit("x")).toBe(false);
    clock.now = 2_000;
    expect(b.admit("x")).toBe(true);
  });

  test("an aborted probe lets the next request probe; a probe that never reports is replaced after a cooldown", () => {
    const b = breakers();
    for (let i = 0; i < 3; i++) b.record("x", "failure");
    clock.now = 1_000;
    expect(b.admit("x")).toBe(true);
    b.record("x", "neutral");
    expect(b.admit("x")).toBe(true);
    // This probe never reports.
    clock.now = 1_999;
    expect(b.admit("x")).toBe(false);
    clock.now = 2_000;
    expect(b.admit("x")).toBe(true);
  });
});

describe("the activity failure of a provider error", () => {
  const rateLimited: ProviderError = { kind: "retryable", status: 429, message: "slow down" };

  test("is retried while its breaker is closed, with the failover reason in its details", () => {
    const failure = llmFailure("m: slow down", rateLimited, 1, 1, true);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.details).toEqual([{ failover: "rate_limit" }]);
  });

  test("is not retried once the breaker is open and the run has models to fail over to", () => {
    const opened = { ...rateLimited, breaker: "opened" as const };
    expect(llmFailure("m", opened, 1, 1, true).nonRetryable).toBe(true);
    // A run with one model keeps its retries, as before failover.
    expect(llmFailure("m", opened, 1, 1, false).nonRetryable).toBe(false);
    expect(llmFailure("m", opened, 1, LLM_RETRY.maximumAttempts, false).nonRetryable).toBe(true);
  });

  test("a refused request is not retried and says nothing of failover", () => {
    const failure = llmFailure("m", { kind: "non_retryable", status: 401, message: "bad key" }, 1, 1, true);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details ?? []).toEqual([]);
  });
});
