/**
 * What a person is told about a run paused at a budget (`keel show`, a followed run's `run_paused`
 * line): whose budget it reached — the run's own cost or token budget, or its tenant's quota — and
 * the `keel` commands that let it go on (docs/api.md, "Budgets that pause"). Pure.
 */
import type { PauseReason } from "../contracts/pause";
import type { AgentEventBody } from "../core/events";

interface PauseAdvice {
  /** Whose budget, which limit and what was used. */
  cause: string;
  /** The commands that let the run go on, or what it waits for. */
  goOn: string;
}

/**
 * Twice `used` (> 0: a run pauses only once it has used some of its budget), rounded up to two
 * significant digits: a raise that leaves the run room to work.
 */
export function suggestedRaise(used: number): number {
  const step = 10 ** (Math.floor(Math.log10(used * 2)) - 1);
  return Math.ceil((used * 2) / step - 1e-9) * step;
}

/**
 * `amount` in plain decimals (never exponent notation, which `--max-cost` refuses), with at least
 * `minDecimals` and enough for two significant digits of a small amount.
 */
function plainNumber(amount: number, minDecimals = 0): string {
  if (amount <= 0) return amount.toFixed(minDecimals);
  return amount.toFixed(Math.max(minDecimals, 1 - Math.floor(Math.log10(amount))));
}

/** The advice for a run of `sessionId` paused for `reason`. */
export function pauseAdvice(sessionId: string, reason: PauseReason): PauseAdvice {
  const resume = `keel resume ${sessionId}`;
  if (reason.type === "tenantBudget") {
    // Not the run's to lift: the operator raises the quota (or the period ends); a resume only
    // makes the run ask again at once instead of at its next recheck.
    return {
      cause: `its tenant's ${reason.budget} quota: ${reason.message}`,
      goOn: `after the operator raises ${reason.budget} (keel admin settings set <tenant> <file.json>) or the period ends, ${resume} goes on at once (the run also asks again by itself from time to time)`,
    };
  }
  const used = Math.max(reason.used, reason.limit);
  const without = `or ${resume} (goes on without it)`;
  if (reason.budget === "cost")
    return {
      cause: `this run's cost budget ($${reason.limit}; used $${plainNumber(reason.used, 4)})`,
      goOn: `keel budget ${sessionId} --max-cost ${plainNumber(suggestedRaise(used))} (raises it) ${without}`,
    };
  return {
    cause: `this run's token budget (${reason.limit} tokens; used ${reason.used})`,
    goOn: `keel budget ${sessionId} --max-tokens ${Math.ceil(suggestedRaise(used))} (raises it) ${without}`,
  };
}

/** The commands that let the run of a `run_paused` event go on (a followed run's pause line). */
export function goOnAfter(event: Extract<AgentEventBody, { type: "run_paused" }>, sessionId: string): string {
  // A run's pause events carry its PauseReason (workflows/run/pause.ts).
  return pauseAdvice(sessionId, event.reason as PauseReason).goOn;
}
