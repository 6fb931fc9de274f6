/**
 * Maps anything an SDK call can throw to a {@link ProviderError} a retry policy can act on, and
 * says which errors a run fails over on (`failoverReasonOf`) and how they count for a provider's
 * circuit breaker (`breakerOutcomeOf`).
 */
import { EGRESS_REFUSED } from "../net/egress-policy";
import type { BreakerOutcome } from "./circuit-breaker";
import type { ProviderError } from "./types";

/** Provider wordings of "the prompt does not fit the context window". */
const CONTEXT_OVERFLOW_PATTERNS: readonly RegExp[] = [
  /prompt is too long/i,
  /context_length_exceeded/i,
  /maximum context length/i,
  /exceeds the context window/i,
  /context window (?:limit|exceeded|size)/i,
  /input is too long/i,
  /too many (?:input )?tokens/i,
];

/** Error body types that mean "try again later" even without an HTTP status (mid-stream errors). */
const RETRYABLE_ERROR_TYPES = new Set(["overloaded_error", "rate_limit_error", "api_error", "server_error"]);

const HTTP_REQUEST_TIMEOUT = 408;
const HTTP_CONFLICT = 409;
const HTTP_PAYLOAD_TOO_LARGE = 413;
const HTTP_TOO_MANY_REQUESTS = 429;
const HTTP_SERVER_ERROR = 500;

/** The SDK error fields we read; both SDKs' `APIError` classes have this shape. */
interface SdkErrorShape {
  status?: number;
  headers?: Headers;
  error?: unknown;
  code?: string | null;
  type?: string;
  message?: string;
  name?: string;
}

export function isContextOverflowText(text: string): boolean {
  return CONTEXT_OVERFLOW_PATTERNS.some((pattern) => pattern.test(text));
}

/** Delay requested by `retry-after-ms` (milliseconds) or `retry-after` (seconds or HTTP date). */
export function retryAfterMsFrom(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const millis = headers.get("retry-after-ms");
  if (millis !== null && Number.isFinite(Number(millis))) return Math.max(0, Number(millis));
  const after = headers.get("retry-after");
  if (after === null) return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function errorBodyType(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const record = body as Record<string, unknown>;
  if (typeof record.type === "string" && record.type !== "error") return record.type;
  const nested = record.error;
  if (typeof nested === "object" && nested !== null) {
    const type = (nested as Record<string, unknown>).type;
    if (typeof type === "string") return type;
  }
  return undefined;
}

/** The egress policy's refusal somewhere in `error`'s cause chain (the SDKs wrap fetch's error twice). */
function egressRefusal(error: unknown): Error | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    if ((current as { code?: unknown }).code === EGRESS_REFUSED && current instanceof Error) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return typeof error === "string" ? error : JSON.stringify(error);
}

/**
 * Classifies a thrown value. `aborted` wins whenever the caller's signal fired; HTTP statuses
 * decide next; errors without a status (network failures, cut streams, mid-stream `error`
 * events) are retryable unless their body says the request itself is invalid.
 */
export function classifyError(error: unknown, signal?: AbortSignal): ProviderError {
  const message = describe(error);
  if (signal?.aborted) return { kind: "aborted", message: "Request was aborted" };
  // The same host is refused again on every attempt.
  const refusal = egressRefusal(error);
  if (refusal) return { kind: "non_retryable", message: refusal.message };
  const sdk = (typeof error === "object" && error !== null ? error : {}) as SdkErrorShape;
  const bodyType = errorBodyType(sdk.error) ?? sdk.type;
  const overflowText = `${message} ${sdk.code ?? ""}`;
  const status = typeof sdk.status === "number" ? sdk.status : undefined;

  if (isContextOverflowText(overflowText) || status === HTTP_PAYLOAD_TOO_LARGE) {
    return { kind: "context_overflow", ...(status ? { status } : {}), message };
  }
  if (status !== undefined) {
    const retryable =
      status === HTTP_TOO_MANY_REQUESTS ||
      status === HTTP_REQUEST_TIMEOUT ||
      status === HTTP_CONFLICT ||
      status >= HTTP_SERVER_ERROR;
    const retryAfterMs = retryable ? retryAfterMsFrom(sdk.headers) : undefined;
    return {
      kind: retryable ? "retryable" : "non_retryable",
      status,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      message,
    };
  }
  if (bodyType && !RETRYABLE_ERROR_TYPES.has(bodyType)) return { kind: "non_retryable", message };
  return { kind: "retryable", message };
}

/** Why a call failed in a way that retrying the same provider will not fix soon. */
export type FailoverReason = "rate_limit" | "overloaded" | "server_error" | "connection" | "circuit_open";

const HTTP_SERVICE_UNAVAILABLE = 503;
/** Anthropic's "overloaded". */
const HTTP_OVERLOADED = 529;

/**
 * Whether a failed call is one the run takes to its next model, and why: every retryable error
 * (rate limit, overload, 5xx, a timeout, a connection failure or cut stream) once the provider's
 * breaker is open or the call's retries are spent, and a call not sent because the breaker was
 * open. A request the provider refused (400, 401/403, 404) or a context overflow is not: the next
 * provider would be asked the same thing, or the key is the operator's to fix (docs/providers.md,
 * "Failover").
 */
export function failoverReasonOf(error: ProviderError): FailoverReason | undefined {
  if (error.kind !== "retryable") return undefined;
  if (error.breaker === "open") return "circuit_open";
  const { status } = error;
  if (status === HTTP_TOO_MANY_REQUESTS) return "rate_limit";
  if (status === HTTP_OVERLOADED || status === HTTP_SERVICE_UNAVAILABLE) return "overloaded";
  if (status !== undefined && status >= HTTP_SERVER_ERROR) return "server_error";
  return "connection";
}

/** How a call's outcome counts for its provider's circuit breaker. */
export function breakerOutcomeOf(error: ProviderError | undefined): BreakerOutcome {
  if (error === undefined) return "success";
  if (error.kind === "aborted") return "neutral";
  return error.kind === "retryable" ? "failure" : "success";
}
