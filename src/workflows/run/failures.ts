/**
 * How a run that failed for good names its failure: for the API (`RunError`) and in one line for
 * the session and `agent_end`. Pure: the failure classes come from @temporalio/common.
 */
import { type ActivityFailure, ApplicationFailure, TimeoutFailure } from "@temporalio/common";
import type { RunError } from "../../contracts/runs";

/** The failure's type (the cause's failure type, or its timeout) and message, for the API. */
export function runErrorOf(error: ActivityFailure): RunError {
  const cause = error.cause;
  if (cause instanceof TimeoutFailure) return { type: `${cause.timeoutType}Timeout`, message: cause.message };
  if (cause instanceof ApplicationFailure)
    return { type: cause.type ?? "ApplicationFailure", message: cause.message };
  return { type: cause?.name ?? "ActivityFailure", message: cause?.message ?? error.message };
}

/** One line for the session and the API: the activity, the failure's type and message, and its timeout. */
export function describeFailure(error: ActivityFailure): string {
  const cause = error.cause;
  const type = cause && "type" in cause && typeof cause.type === "string" ? cause.type : cause?.name;
  const timeout = cause && "timeoutType" in cause ? ` (${String(cause.timeoutType)} timeout)` : "";
  return `${error.activityType ?? "activity"} failed: ${type ?? "error"}${timeout}: ${cause?.message ?? error.message}`;
}
