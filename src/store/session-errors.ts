/**
 * The session store's own errors (S3 errors are passed through unchanged). Callers tell them
 * apart by class: a missing session, a conflicting writer, corrupt or invalid data.
 */
import type { SessionRef } from "./session-keys";

/** Base class of the store's own errors (S3 errors are passed through unchanged). */
class SessionStoreError extends Error {}

export class SessionNotFoundError extends SessionStoreError {
  override readonly name = "SessionNotFoundError";
  constructor(readonly ref: SessionRef) {
    super(`session ${ref.tenantId}/${ref.sessionId} does not exist`);
  }
}

export class SessionExistsError extends SessionStoreError {
  override readonly name = "SessionExistsError";
  constructor(readonly ref: SessionRef) {
    super(`session ${ref.tenantId}/${ref.sessionId} already exists`);
  }
}

/**
 * A different entry is already stored at the sequence number: another writer (a zombie attempt
 * of an earlier run) got there first. Never retried: the caller's view of the session is stale.
 */
export class EntryConflictError extends SessionStoreError {
  override readonly name = "EntryConflictError";
  constructor(
    readonly ref: SessionRef,
    readonly seq: number,
    readonly attemptedId: string,
    readonly storedId: string,
  ) {
    super(
      `entry ${seq} of session ${ref.tenantId}/${ref.sessionId} is ${JSON.stringify(storedId)}, ` +
        `not ${JSON.stringify(attemptedId)}`,
    );
  }
}

/** A stored object is not what the layout says it is (bad JSON, bad schema, wrong chunk size). */
export class CorruptObjectError extends SessionStoreError {
  override readonly name = "CorruptObjectError";
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`corrupt object ${key}: ${reason}`);
  }
}

/** An entry or header that does not match its schema; refused before anything is written. */
export class InvalidSessionDataError extends SessionStoreError {
  override readonly name = "InvalidSessionDataError";
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`refusing to write ${key}: ${reason}`);
  }
}

/** An object the store knows exists (listed, or acknowledged by a 412) could not be read. */
export class MissingObjectError extends SessionStoreError {
  override readonly name = "MissingObjectError";
  constructor(readonly key: string) {
    super(`object ${key} exists but could not be read`);
  }
}
