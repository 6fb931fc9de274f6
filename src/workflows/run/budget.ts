/**
 * Budgets that pause a run: which budget a run has reached (its own cost and token limits, then
 * its tenant's as the last model call reported it), how a `budget` signal changes them, and the
 * words a pause is shown with. Pure, like `state.ts`: the workflow waits in `pause.ts`.
 */
import {
  type BudgetRequest,
  DEFAULT_PAUSE_TIMEOUT_SECONDS,
  type PauseReason,
  type RunLimits,
} from "../types";
import type { RunRecord } from "./state";

/**
 * The budget the run has reached, if any: the first of cost, tokens, then the tenant's. A cost
 * budget on a model without prices is not here: it cannot be checked, so the run ends instead
 * (decide.ts).
 */
export function budgetReached(run: RunRecord): PauseReason | undefined {
  const { limits } = run.settings;
  if (limits.maxCostUsd > 0 && !run.usage.cost.unpriced && run.usage.cost.total >= limits.maxCostUsd) {
    return { type: "runBudget", budget: "cost", limit: limits.maxCostUsd, used: run.usage.cost.total };
  }
  const maxTokens = limits.maxTokens ?? 0;
  if (maxTokens > 0 && run.usage.totalTokens >= maxTokens) {
    return { type: "runBudget", budget: "tokens", limit: maxTokens, used: run.usage.totalTokens };
  }
  if (run.tenantBudget) {
    return { type: "tenantBudget", budget: run.tenantBudget.budget, message: run.tenantBudget.message };
  }
  return undefined;
}

/** One line saying why the run paused (the Temporal UI, the session view, the events). */
export function describePause(reason: PauseReason): string {
  if (reason.type === "tenantBudget") return reason.message;
  return reason.budget === "cost"
    ? `cost budget reached ($${reason.limit}; used $${reason.used.toFixed(4)})`
    : `token budget reached (${reason.limit}; used ${reason.used})`;
}

/** How long the run waits when paused, in ms. */
export function pauseTimeoutMs(limits: RunLimits): number {
  return (limits.pauseTimeoutSeconds ?? DEFAULT_PAUSE_TIMEOUT_SECONDS) * 1000;
}

/** Whether a value is a usable budget: a finite number ≥ 0 (0 removes the budget). */
function isBudget(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

/**
 * Checks a `budget` signal's argument (the API checks it first; a signal from elsewhere is checked
 * here and ignored when unusable): an object whose `maxCostUsd`/`maxTokens`, when present, are
 * numbers ≥ 0 and whose `resume`, when present, is a boolean.
 */
export function parseBudgetRequest(input: unknown): BudgetRequest | undefined {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return undefined;
  const { maxCostUsd, maxTokens, resume } = input as Record<string, unknown>;
  if (maxCostUsd !== undefined && !isBudget(maxCostUsd)) return undefined;
  if (maxTokens !== undefined && !isBudget(maxTokens)) return undefined;
  if (resume !== undefined && typeof resume !== "boolean") return undefined;
  return {
    ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(resume !== undefined ? { resume } : {}),
  };
}

/**
 * Applies a budget request to the run's limits (carried into a continue-as-new and the run's
 * settings from then on). With `resume`, a run budget still reached after the new values is
 * removed: resuming means going on past it. A tenant's budget is not the run's to lift: a resume
 * makes a run held by one ask again at once whether the tenant is still over it (pause.ts).
 */
export function applyBudget(run: RunRecord, request: BudgetRequest): void {
  const limits: RunLimits = {
    ...run.settings.limits,
    ...(request.maxCostUsd !== undefined ? { maxCostUsd: request.maxCostUsd } : {}),
    ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
  };
  run.settings = { ...run.settings, limits };
  if (!request.resume) return;
  if (run.tenantBudget) run.recheckTenantBudget = true;
  for (let reached = budgetReached(run); reached?.type === "runBudget"; reached = budgetReached(run)) {
    const lifted =
      reached.budget === "cost" ? { maxCostUsd: 0 } : ({ maxTokens: 0 } satisfies Partial<RunLimits>);
    run.settings = { ...run.settings, limits: { ...run.settings.limits, ...lifted } };
  }
}
