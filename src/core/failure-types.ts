/**
 * Failure types (Temporal's `ApplicationFailure.type`) shared by activities, workflows and the API.
 * Temporal names a failure after the error's class unless a type is given, so every failure that a
 * retry policy or a caller must recognise is thrown with one of these.
 */
export const FailureType = {
  /** A different entry is stored at the slot: the writer's view of the session is stale. Never retried. */
  entryConflict: "EntryConflict",
  /** An entry that does not match the session schema; refused before anything was written. */
  invalidSessionData: "InvalidSessionData",
  /** The entry an operation names is not in the session. */
  unknownEntry: "UnknownEntry",
  /** The model id is not in the catalog. */
  unknownModel: "UnknownModel",
  /** The provider refused the request for good (400, auth, policy). */
  nonRetryableLlm: "NonRetryableLlmError",
  /** Rate limit, overload, 5xx or network: retried with backoff. */
  retryableLlm: "RetryableLlmError",
  /** The session's workspace directory is not on this worker (nothing to snapshot). */
  workspaceMissing: "WorkspaceMissing",
  /** The workspace exceeds the snapshot size limit. */
  workspaceTooLarge: "WorkspaceTooLarge",
  /** The run's workspace source is not one this deployment may fetch (git-source.ts). */
  workspaceSourceRefused: "WorkspaceSourceRefused",
  /** The worker serves one tenant only (KEEL_SINGLE_TENANT) and the call is another's. Never retried. */
  tenantNotServed: "TenantNotServed",
  /** A schedule's firing over its tenant's quota: it starts no run. Never retried. */
  quotaExceeded: "QuotaExceeded",
} as const;

/** Failure types of a refused delivery (the run's `deliver` update), mapped to HTTP by the API. */
export const DeliveryRefusal = {
  busy: "RunBusy",
  queueFull: "QueueFull",
  ended: "RunEnded",
  invalid: "InvalidMessage",
} as const;

/** Failure types of a refused abort (the run's `abortRun` update), mapped to HTTP by the API. */
export const AbortRefusal = {
  /** The reason is not a non-blank string of at most MAX_ABORT_REASON_CHARS characters. */
  invalid: "InvalidAbort",
  /** The run has already ended (it is closing its session or posting its answer). */
  ended: "RunEnded",
} as const;
