/** A run paused at a budget: why, how it shows, and the `budget` signal that lifts it (docs/architecture.md, "Paused"). */

/** How long a paused run waits for a raise or a resume by default: one day. */
export const DEFAULT_PAUSE_TIMEOUT_SECONDS = 24 * 60 * 60;

/**
 * Why a run paused at a turn boundary: its own limits (`runBudget`), or its tenant's token or
 * cost quota for the day or month (`tenantBudget`, reported by the worker after each model call:
 * tenants/budget-check.ts).
 */
export type PauseReason =
  | { type: "runBudget"; budget: "cost" | "tokens"; limit: number; used: number }
  | { type: "tenantBudget"; budget: string; message: string };

/** The tenant budget a run waits on: which quota, its limit and use, and one line saying so. */
export interface TenantBudgetHold {
  /** The quota's name (`tokensPerDay`, `costPerDayUsd`, `tokensPerMonth`, `costPerMonthUsd`). */
  budget: string;
  limit: number;
  used: number;
  message: string;
  /** How long a run paused on it waits before asking again (ms). */
  recheckAfterMs: number;
}

/** A paused run as its state query and the session view show it. */
export interface RunPause {
  reason: PauseReason;
  /** One line saying why (the same text as the Temporal UI's details). */
  message: string;
  /** Epoch ms at which it paused, and at which the pause times out. */
  since: number;
  until: number;
  /** A resume asked whether the tenant's budget still holds the run; the answer is not in yet. */
  rechecking?: boolean;
}

/**
 * The `budget` signal's argument: new budgets for the run (a field left out keeps its value; 0
 * removes that budget) and, with `resume`, continue a paused run even when its budget is still
 * reached (that budget is then removed). Accepted while the run runs or is paused.
 */
export interface BudgetRequest {
  maxCostUsd?: number;
  maxTokens?: number;
  resume?: boolean;
}
