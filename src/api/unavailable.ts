/**
 * Which dependency an error says is unreachable: Temporal or the S3 store. The API answers those
 * with 503 and `Retry-After` (a client should retry), never as an internal error.
 */
import { RunNotAnsweringError } from "../run-client/session-runs";
import { s3HttpStatus } from "../store/s3-requests";
import type { ProblemSlug } from "./problems";
import { isConnectionFailure } from "./temporal";

export type UnavailableDependency = "temporal" | "storage";

/** How the API names an unreachable dependency to a caller: the problem and its text. */
export const UNAVAILABLE_PROBLEMS: Record<UnavailableDependency, { slug: ProblemSlug; msg: string }> = {
  temporal: { slug: "temporal-unavailable", msg: "temporal unavailable" },
  storage: { slug: "storage-unavailable", msg: "storage unavailable" },
};

/** S3 answers that mean "not now": server errors left after the SDK's own retries. */
const S3_UNAVAILABLE_STATUSES = new Set([500, 502, 503, 504]);
/** Socket-level failures (the API's only plain-HTTP dependency is S3; Temporal speaks gRPC). */
const NETWORK_ERROR_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);
const S3_UNAVAILABLE_NAMES = new Set(["TimeoutError", "RequestTimeout", "SlowDown", "ServiceUnavailable"]);

function isStorageFailure(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const status = s3HttpStatus(current);
    if (status !== undefined && S3_UNAVAILABLE_STATUSES.has(status)) return true;
    const { code, name } = current as { code?: unknown; name?: unknown };
    if (typeof code === "string" && NETWORK_ERROR_CODES.has(code)) return true;
    if (typeof name === "string" && S3_UNAVAILABLE_NAMES.has(name)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** The unreachable dependency `error` reports, or undefined for any other error. */
export function unavailableDependency(error: unknown): UnavailableDependency | undefined {
  if (isConnectionFailure(error)) return "temporal";
  if (isStorageFailure(error)) return "storage";
  return undefined;
}

/**
 * What an event stream that failed tells its client: why the run cannot be read, or which
 * dependency is unreachable, as a response would say it. Never the error's own text, which may
 * name internal addresses, buckets or hosts (the API's log has it).
 */
export function streamFailureMessage(error: unknown): string {
  if (error instanceof RunNotAnsweringError) return `the run cannot be read now: ${error.why}`;
  const unavailable = unavailableDependency(error);
  if (unavailable) return `the API could not read the run's events: ${UNAVAILABLE_PROBLEMS[unavailable].msg}`;
  return "the API could not read the run's events (an internal error, logged by the API)";
}
