/** How store errors cross the activity boundary. */
import { ApplicationFailure } from "@temporalio/activity";
import { FailureType } from "../core/failure-types";
import { EntryConflictError } from "../store/session-store";

/**
 * Runs a store write; an `EntryConflictError` (a different entry is stored at the slot: the
 * writer's view of the session is stale) becomes a non-retryable `EntryConflict` failure, so the
 * activity fails at once instead of being retried until its schedule runs out. Other errors (S3
 * outages) pass through unchanged and are retried by the activity's policy.
 */
export async function conflictsAsFailures<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof EntryConflictError) {
      throw ApplicationFailure.nonRetryable(error.message, FailureType.entryConflict);
    }
    throw error;
  }
}

/** The non-retryable failure for an entry that is not the one the workflow assigned to a slot. */
export function entryConflict(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, FailureType.entryConflict);
}
