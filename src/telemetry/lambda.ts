/**
 * Telemetry of a Lambda invocation. Lambda freezes the execution environment as soon as a
 * handler returns: spans and metrics still batched then would wait, frozen, for the environment's
 * next invocation (which may never come). So each invocation exports what it made before it
 * returns.
 */
import type { Telemetry } from "./sdk";

/** Left of the invocation's time for returning after the flush gave up. */
const RETURN_MARGIN_MS = 500;

/**
 * Runs `invoke`, then (telemetry on) exports the spans and metrics buffered so far before
 * returning its result or error. The flush waits at most until `RETURN_MARGIN_MS` before the
 * invocation's deadline (`remainingMs`, Lambda's `getRemainingTimeInMillis`): an unreachable
 * receiver costs that invocation its buffered telemetry, never its own outcome.
 */
export async function flushedInvocation<T>(
  telemetry: Telemetry | undefined,
  remainingMs: (() => number) | undefined,
  invoke: () => Promise<T>,
): Promise<T> {
  if (!telemetry) return invoke();
  try {
    return await invoke();
  } finally {
    await flushWithin(telemetry, remainingMs ? remainingMs() - RETURN_MARGIN_MS : undefined);
  }
}

async function flushWithin(telemetry: Telemetry, budgetMs: number | undefined): Promise<void> {
  if (budgetMs === undefined) return telemetry.flush();
  if (budgetMs <= 0) return;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, budgetMs);
  });
  try {
    await Promise.race([telemetry.flush(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
