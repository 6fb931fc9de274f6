/**
 * What a live run waits for, when it waits on something outside itself: a runner of its
 * environment, or a worker (one that stopped answering, or none taking the run's next task).
 * The API reads it from Temporal's description of the run (run-client/run-waits.ts) and shows it
 * in the session view (`run.waiting`) and in the event stream (`event: waiting`), so a person
 * following a run is told what it waits for instead of seeing nothing.
 */

export interface RunWait {
  type: "waiting";
  /** What would end the wait: a runner of an environment, or a worker. */
  on: "environment" | "worker";
  /** The environment, when `on` is `environment`. */
  environment?: string;
  /**
   * What a person reads, starting with "waiting for" (no running time: it stays the same while
   * the wait does, so a client prints it once).
   */
  message: string;
  /** The activity attempt that waits, or whose runner or worker went silent. */
  attempt: number;
  /**
   * Set when a tool call's runner or worker stopped answering: the call's live output of
   * attempts up to this one was produced before that, and such output read later is not news.
   */
  staleUpTo?: number;
  /** Since when (epoch ms): the task was scheduled, or its runner or worker last reported. */
  since: number;
}

/**
 * What a call of environment `environment` waits for while attempt `attempt` is not taken: the
 * same words in the run's stream (the worker's watcher) and in the API's waits.
 */
export function environmentWaitText(environment: string, attempt: number): string {
  return `waiting for environment \`${environment}\`: ${
    attempt > 1
      ? "the runner that took this call stopped answering, and no runner has taken it again yet"
      : "no runner has taken this call yet"
  }`;
}
