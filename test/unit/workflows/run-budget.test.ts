/**
 * Budgets that pause, without a server: which budget a run has reached, what a `budget` signal
 * may carry, and how a raise or a resume changes the run's limits.
 */
import { emptyUsage } from "../../../src/core/usage";
import {
  applyBudget,
  budgetReached,
  describePause,
  parseBudgetRequest,
} from "../../../src/workflows/run/budget";
import { createRunRecord, type RunRecord } from "../../../src/workflows/run/state";
import { DEFAULT_RUN_SETTINGS, type RunLimits } from "../../../src/workflows/types";

function spent(limits: Partial<RunLimits>, cost: number, tokens: number): RunRecord {
  const run = createRunRecord(
    {
      tenantId: "t",
      sessionId: "s",
      settings: { ...DEFAULT_RUN_SETTINGS, limits: { ...DEFAULT_RUN_SETTINGS.limits, ...limits } },
    },
    { now: () => 0, random: () => 0.5 },
  );
  run.usage = { ...emptyUsage(), totalTokens: tokens, cost: { ...emptyUsage().cost, total: cost } };
  return run;
}

describe("budgetReached", () => {
  test("no budget, or a budget not reached, pauses nothing", () => {
    expect(budgetReached(spent({}, 5, 5_000))).toBeUndefined();
    expect(budgetReached(spent({ maxCostUsd: 1, maxTokens: 10_000 }, 0.99, 9_999))).toBeUndefined();
  });

  test("the cost budget first, then the token budget", () => {
    expect(budgetReached(spent({ maxCostUsd: 1, maxTokens: 10 }, 1, 20))).toEqual({
      type: "runBudget",
      budget: "cost",
      limit: 1,
      used: 1,
    });
    const tokens = budgetReached(spent({ maxTokens: 10 }, 1, 20));
    expect(tokens).toEqual({ type: "runBudget", budget: "tokens", limit: 10, used: 20 });
    expect(tokens && describePause(tokens)).toBe("token budget reached (10; used 20)");
  });

  test("a cost budget on an unpriced model does not pause (the run ends instead: it cannot be checked)", () => {
    const run = spent({ maxCostUsd: 1 }, 0, 0);
    run.usage = { ...run.usage, cost: { ...run.usage.cost, unpriced: true } };
    expect(budgetReached(run)).toBeUndefined();
  });
});

describe("parseBudgetRequest", () => {
  test("takes numbers ≥ 0 and a boolean resume", () => {
    expect(parseBudgetRequest({ maxCostUsd: 2, maxTokens: 0, resume: true })).toEqual({
      maxCostUsd: 2,
      maxTokens: 0,
      resume: true,
    });
    expect(parseBudgetRequest({})).toEqual({});
  });

  test.each([
    null,
    "raise",
    [],
    { maxCostUsd: -1 },
    { maxCostUsd: Number.POSITIVE_INFINITY },
    { maxTokens: "100" },
    { resume: "yes" },
  ])("refuses %p", (input) => {
    expect(parseBudgetRequest(input)).toBeUndefined();
  });
});

describe("applyBudget", () => {
  test("a raise changes only the budgets it names", () => {
    const run = spent({ maxCostUsd: 1, maxTokens: 100 }, 1, 50);
    applyBudget(run, { maxCostUsd: 3 });
    expect(run.settings.limits).toMatchObject({ maxCostUsd: 3, maxTokens: 100 });
    expect(budgetReached(run)).toBeUndefined();
  });

  test("a raise that is not enough leaves the run at its budget", () => {
    const run = spent({ maxCostUsd: 1 }, 2, 0);
    applyBudget(run, { maxCostUsd: 1.5 });
    expect(budgetReached(run)).toMatchObject({ budget: "cost", limit: 1.5 });
  });

  test("a resume removes every run budget still reached, and only those", () => {
    const run = spent({ maxCostUsd: 1, maxTokens: 10, maxTurns: 7 }, 2, 20);
    applyBudget(run, { resume: true });
    expect(run.settings.limits).toMatchObject({ maxCostUsd: 0, maxTokens: 0, maxTurns: 7 });
    expect(budgetReached(run)).toBeUndefined();
    const raised = spent({ maxCostUsd: 1, maxTokens: 10 }, 2, 5);
    applyBudget(raised, { maxCostUsd: 5, resume: true });
    expect(raised.settings.limits).toMatchObject({ maxCostUsd: 5, maxTokens: 10 });
  });
});

describe("a tenant's budget", () => {
  const hold = {
    budget: "tokensPerDay",
    limit: 100,
    used: 150,
    message: "the tenant's daily token budget is used up",
    recheckAfterMs: 60_000,
  };

  test("holds the run after its own budgets, shown with the tenant's words", () => {
    const run = spent({}, 0, 0);
    run.tenantBudget = hold;
    const reached = budgetReached(run);
    expect(reached).toEqual({ type: "tenantBudget", budget: "tokensPerDay", message: hold.message });
    expect(reached && describePause(reached)).toBe(hold.message);
    const alsoOwn = spent({ maxTokens: 10 }, 0, 20);
    alsoOwn.tenantBudget = hold;
    expect(budgetReached(alsoOwn)).toMatchObject({ type: "runBudget", budget: "tokens" });
  });

  test("a resume does not lift it: it asks for a fresh check; a raise of the run's budgets asks nothing", () => {
    const run = spent({ maxTokens: 10 }, 0, 20);
    run.tenantBudget = hold;
    applyBudget(run, { maxTokens: 1_000 });
    expect(run.recheckTenantBudget).toBeUndefined();
    applyBudget(run, { resume: true });
    expect(run.recheckTenantBudget).toBe(true);
    expect(budgetReached(run)).toMatchObject({ type: "tenantBudget" });
  });
});
