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

/**
 * Runs `work` while heartbeating on a timer, so an activity waiting on something silent stays
 * alive and still receives cancellation. Progress heartbeats from `work` itself add to these.
 */
export async function whileHeartbeating<T>(ctx: Context, phase: string, work: () => Promise<T>): Promise<T> {
  const timer = setInterval(() => ctx.heartbeat({ phase }), heartbeatIntervalMs(ctx));
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
