import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import { classifyError, isContextOverflowText, retryAfterMsFrom } from "../../../src/providers/errors";

function apiError(status: number | undefined, body: object, headers: Record<string, string> = {}) {
  return APIError.generate(status, body, undefined, new Headers(headers));
}

describe("classifyError", () => {
  test.each([
    [429, "retryable"],
    [408, "retryable"],
    [500, "retryable"],
    [502, "retryable"],
    [529, "retryable"],
    [400, "non_retryable"],
    [401, "non_retryable"],
    [403, "non_retryable"],
    [404, "non_retryable"],
  ])("status %i is %s", (status, kind) => {
    expect(classifyError(apiError(status, { error: { message: "x" } }))).toMatchObject({ kind, status });
  });

  test("retry-after-ms wins over retry-after", () => {
    const error = apiError(
      429,
      { error: { message: "slow down" } },
      { "retry-after-ms": "1500", "retry-after": "9" },
    );
    expect(classifyError(error)).toMatchObject({ kind: "retryable", retryAfterMs: 1500 });
  });

  test("retry-after as seconds and as an HTTP date", () => {
    expect(retryAfterMsFrom(new Headers({ "retry-after": "3" }))).toBe(3000);
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMsFrom(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }), now)).toBe(5000);
    expect(retryAfterMsFrom(new Headers({ "retry-after": "soon" }))).toBeUndefined();
  });

  test.each([
    "prompt is too long: 210000 tokens > 200000 maximum",
    "This model's maximum context length is 128000 tokens.",
    "Your input exceeds the context window of this model.",
  ])("context overflow wording: %s", (message) => {
    expect(isContextOverflowText(message)).toBe(true);
    expect(classifyError(apiError(400, { error: { message } }))).toMatchObject({ kind: "context_overflow" });
  });

  test("context_length_exceeded code alone is an overflow", () => {
    const error = apiError(400, { error: { message: "bad", code: "context_length_exceeded" } });
    expect(classifyError(error).kind).toBe("context_overflow");
  });

  test("network failures and timeouts are retryable", () => {
    expect(classifyError(new APIConnectionError({ message: "ECONNREFUSED" })).kind).toBe("retryable");
    expect(classifyError(new APIConnectionTimeoutError()).kind).toBe("retryable");
    expect(classifyError(new TypeError("terminated")).kind).toBe("retryable");
  });

  test("mid-stream error events: overloaded is retryable, invalid request is not", () => {
    // Both SDKs throw an APIError without a status for an `error` event inside a stream.
    const midStream = (body: object) => new APIError(undefined, body, "stream error", undefined);
    expect(classifyError(midStream({ type: "error", error: { type: "overloaded_error" } })).kind).toBe(
      "retryable",
    );
    expect(classifyError(midStream({ type: "invalid_request_error", message: "no" })).kind).toBe(
      "non_retryable",
    );
  });

  test("a fired abort signal wins over any error", () => {
    const controller = new AbortController();
    controller.abort();
    expect(classifyError(new APIUserAbortError(), controller.signal).kind).toBe("aborted");
    expect(classifyError(apiError(500, {}), controller.signal).kind).toBe("aborted");
  });
});
