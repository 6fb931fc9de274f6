/** How store errors cross the activity boundary. */
import { ApplicationFailure } from "@temporalio/activity";
import { FailureType } from "../core/failure-types";
import { EntryConflictError, InvalidSessionDataError } from "../store/session-errors";

/**
 * Runs a store write and turns the store's errors that no retry can cure into non-retryable
 * failures, so the activity fails at once with the reason instead of being retried until its
 * schedule runs out: `EntryConflictError` (a different entry is stored at the slot: the writer's
 * view of the session is stale) becomes `EntryConflict`; `InvalidSessionDataError` (the entry does
 * not match the schema, refused before anything was written) becomes `InvalidSessionData`. Other
 * errors (S3 outages) pass through unchanged and are retried by the activity's policy.
 */
export async function storeWriteFailures<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof EntryConflictError) throw entryConflict(error.message);
    if (error instanceof InvalidSessionDataError) {
      throw ApplicationFailure.nonRetryable(error.message, FailureType.invalidSessionData);
    }
    throw error;
  }
}

/** The non-retryable failure for an entry that is not the one the workflow assigned to a slot. */
export function entryConflict(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, FailureType.entryConflict);
}
