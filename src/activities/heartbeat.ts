import type { Context } from "@temporalio/activity";

/** Fallback when an activity runs without a heartbeat timeout. */
const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000;

/**
 * How often an activity heartbeats while it waits on something silent (a model that has not
 * started streaming, a quiet command): a third of its heartbeat timeout, so a live activity is
 * never taken for a dead one, and a cancellation reaches it promptly.
 */
function heartbeatIntervalMs(ctx: Context): number {
  const timeout = ctx.info.heartbeatTimeoutMs;
  return timeout ? Math.max(200, Math.floor(timeout / 3)) : DEFAULT_HEARTBEAT_INTERVAL_MS;
}

/** Reports progress: a heartbeat with `details`, if the activity is past its quiet start. */
export type ProgressHeartbeat = (details?: Record<string, unknown>) => void;

/**
 * Runs `work` while heartbeating on a timer, so an activity waiting on something silent stays
 * alive and still receives cancellation. `work` gets a {@link ProgressHeartbeat} for its own
 * progress reports, which is silent for the first heartbeat interval and passes every call on
 * after it (the SDK throttles them). Why the quiet start: each heartbeat that reaches the server
 * is a billed Temporal Cloud Action and the SDK sends an activity's first heartbeat at once, so
 * reporting progress from the first streamed token cost one Action per model call. Work shorter
 * than the interval needs no heartbeat; longer work heartbeats from the timer by then, which also
 * gives cancellation its first chance to arrive (no later than the first throttled progress
 * heartbeat used to).
 *
 * `carried` goes into every heartbeat's details: Temporal hands the last heartbeat's details to
 * the activity's next attempt, so what an attempt must pass on (see `llm-retry.ts`) cannot be
 * overwritten by a progress report.
 */
export async function whileHeartbeating<T>(
  ctx: Context,
  phase: string,
  work: (progress: ProgressHeartbeat) => Promise<T>,
  carried: object = {},
): Promise<T> {
  const intervalMs = heartbeatIntervalMs(ctx);
  const quietUntil = Date.now() + intervalMs;
  const timer = setInterval(() => ctx.heartbeat({ ...carried, phase }), intervalMs);
  try {
    return await work((details) => {
      if (Date.now() >= quietUntil) ctx.heartbeat({ ...carried, ...details });
    });
  } finally {
    clearInterval(timer);
  }
}
