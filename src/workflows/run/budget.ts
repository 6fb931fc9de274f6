/**
 * Budgets that pause a run: which budget a run has reached (its own cost and token limits, then
 * its tenant's as the last model call reported it), how a `budget` signal changes them, and the
 * words a pause is shown with; and the share of its budgets each of its sub-agents gets. Pure,
 * like `state.ts`: the workflow waits in `pause.ts` and starts sub-agents in `task-calls.ts`.
 */

import {
  type BudgetRequest,
  DEFAULT_PAUSE_TIMEOUT_SECONDS,
  type PauseReason,
  type RunLimits,
} from "../../contracts/runs";
import { TASK_TOOL_NAME } from "../../core/agents";
import { type ChildShare, callState, type RunRecord } from "./state";

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

/**
 * The least cost budget a sub-agent gets where its parent has one: 0 would mean "no budget". A
 * child with this little ends after its first model call, as a run ends after the call that
 * crosses its budget.
 */
export const LEAST_COST_SHARE_USD = 1e-9;

/**
 * The share of the run's budgets the sub-agent of the `task` call whose result goes at `seq` gets:
 * what the run has left of each — its limit less what it used (its own model calls and those of
 * its sub-agents that ended) and less what its sub-agents still running hold — divided among the
 * batch's `task` calls not started yet, this one included. Calls started together get equal
 * parts; a later one gets what the earlier ones left. So the shares held at any time never add up
 * to more than the run has left, and the tree spends at most the run's budget plus the one model
 * call by which each of its runs crosses its own.
 *
 * A budget of 0 (none) stays 0; one used up leaves the least share (cost `LEAST_COST_SHARE_USD`,
 * tokens 1). Turns are whole: the earlier calls get the rounding, and a share of 0 turns means the
 * parent has none left to give (the child is not started). A sibling counts as not started until
 * it starts or its result is stored, so one refused meanwhile leaves its part with the parent.
 */
export function childShare(run: RunRecord, seq: number): ChildShare {
  const { limits } = run.settings;
  const held = run.childShares.reduce(
    (sum, { share }) => ({
      maxCostUsd: sum.maxCostUsd + share.maxCostUsd,
      maxTokens: sum.maxTokens + share.maxTokens,
      maxTurns: sum.maxTurns + share.maxTurns,
    }),
    { maxCostUsd: 0, maxTokens: 0, maxTurns: 0 },
  );
  const notStarted = run.batch.filter(({ summary, slot }) => {
    if (slot.seq === seq) return true;
    const state = callState(run, summary.id);
    return summary.name === TASK_TOOL_NAME && (state === "pending" || state === "awaiting_approval");
  }).length;
  const maxTokens = limits.maxTokens ?? 0;
  const costLeft = limits.maxCostUsd - run.usage.cost.total - held.maxCostUsd;
  const tokensLeft = maxTokens - run.usage.totalTokens - held.maxTokens;
  const turnsLeft = limits.maxTurns - run.turn - run.subAgentTurns - held.maxTurns;
  return {
    maxCostUsd: limits.maxCostUsd > 0 ? Math.max(costLeft / notStarted, LEAST_COST_SHARE_USD) : 0,
    maxTokens: maxTokens > 0 ? Math.max(Math.floor(tokensLeft / notStarted), 1) : 0,
    maxTurns: Math.max(Math.ceil(turnsLeft / notStarted), 0),
  };
}

/**
 * What a sub-agent got of its parent's budgets in runs started before shares (patch
 * `sub-agent-shares`): all the run had left of its cost budget, its whole token budget, and its
 * turns left when they counted its sub-agents' (`countTurns`, patch `sub-agent-turns`), else its
 * whole turn limit. Parallel children each got all of it.
 */
export function wholeBudgetLeft(run: RunRecord, countTurns: boolean): ChildShare {
  const { limits } = run.settings;
  return {
    maxCostUsd:
      limits.maxCostUsd > 0 ? Math.max(limits.maxCostUsd - run.usage.cost.total, LEAST_COST_SHARE_USD) : 0,
    maxTokens: limits.maxTokens ?? 0,
    maxTurns: countTurns ? limits.maxTurns - run.turn - run.subAgentTurns : limits.maxTurns,
  };
}
