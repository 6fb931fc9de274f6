/**
 * Budgets that pause, without a server: which budget a run has reached, what a `budget` signal
 * may carry, and how a raise or a resume changes the run's limits; the shares of its budgets its
 * sub-agents get.
 */

import { DEFAULT_RUN_SETTINGS, type RunLimits } from "../../../src/contracts/runs";
import { emptyUsage } from "../../../src/core/usage";
import {
  applyBudget,
  budgetReached,
  childShare,
  describePause,
  LEAST_COST_SHARE_USD,
  parseBudgetRequest,
  wholeBudgetLeft,
} from "../../../src/workflows/run/budget";
import {
  type ChildShare,
  createRunRecord,
  holdShare,
  moveCall,
  type RunRecord,
  recordModelUsage,
  releaseShare,
  startBatch,
} from "../../../src/workflows/run/state";

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

describe("a sub-agent's share of its parent's budgets", () => {
  /** A run that used `cost` and `tokens` in `turn` turns, in a batch of calls named `names`. */
  function inBatch(
    limits: Partial<RunLimits>,
    used: { cost: number; tokens: number; turn: number },
    names: string[],
  ): RunRecord {
    const run = spent(limits, used.cost, used.tokens);
    run.turn = used.turn;
    run.cursor = { nextSeq: 1, leafId: "assistant" };
    startBatch(
      run,
      names.map((name, i) => ({ id: `call-${i}`, name, argumentsPreview: "{}", label: "" })),
    );
    return run;
  }

  /** The `index`th call of the batch starts its child: takes its share and holds it. */
  function start(run: RunRecord, index: number): ChildShare {
    const call = run.batch[index];
    if (!call) throw new Error(`no call ${index}`);
    const share = childShare(run, call.slot.seq);
    holdShare(run, call.slot.seq, share);
    moveCall(run, call.summary.id, "running");
    return share;
  }

  const sum = (shares: ChildShare[], key: keyof ChildShare) =>
    shares.reduce((total, share) => total + share[key], 0);

  test("three task calls started together get a third each of what is left: never more, together", () => {
    // $0.10 of $0.11, 10,000 of 110,000 tokens and 49 of 50 turns left.
    const run = inBatch(
      { maxCostUsd: 0.11, maxTokens: 110_000, maxTurns: 50 },
      { cost: 0.01, tokens: 100_000, turn: 1 },
      ["task", "task", "task"],
    );
    const shares = [0, 1, 2].map((index) => start(run, index));
    for (const share of shares) expect(share.maxCostUsd).toBeCloseTo(0.1 / 3, 12);
    // Not the parent's whole token budget: a third of what is left.
    expect(shares.map((share) => share.maxTokens)).toEqual([3_333, 3_333, 3_334]);
    expect(shares.map((share) => share.maxTurns)).toEqual([17, 16, 16]);
    // Floating point may add its last digit to the cost shares' sum; nothing more.
    expect(sum(shares, "maxCostUsd")).toBeLessThanOrEqual(0.1 + 1e-15);
    expect(sum(shares, "maxTokens")).toBeLessThanOrEqual(10_000);
    expect(sum(shares, "maxTurns")).toBeLessThanOrEqual(49);
    expect(run.childShares.map(({ share }) => share)).toEqual(shares);
  });

  test("only the batch's task calls not started yet divide it; a later call gets what the earlier ones left", () => {
    const run = inBatch({ maxCostUsd: 1, maxTokens: 1_000, maxTurns: 20 }, { cost: 0, tokens: 0, turn: 0 }, [
      "task",
      "bash",
      "task",
      "task",
    ]);
    // A sibling refused before it started counts no more; one awaiting approval still does.
    moveCall(run, "call-3", "failed");
    moveCall(run, "call-2", "awaiting_approval");
    const first = start(run, 0);
    expect(first).toEqual({ maxCostUsd: 0.5, maxTokens: 500, maxTurns: 10 });
    // The first child ends having spent $0.2, 100 tokens and 4 turns: its share goes back and its
    // usage is counted, so what it did not spend is there for the next call.
    releaseShare(run, run.batch[0]?.slot.seq ?? -1);
    recordModelUsage(run, { ...emptyUsage(), totalTokens: 100, cost: { ...emptyUsage().cost, total: 0.2 } });
    run.subAgentTurns += 4;
    expect(run.childShares).toEqual([]);
    expect(start(run, 2)).toEqual({ maxCostUsd: 0.8, maxTokens: 900, maxTurns: 16 });
  });

  test("a child still running holds its share: the next batch's calls divide the rest", () => {
    const run = inBatch({ maxCostUsd: 1, maxTokens: 900, maxTurns: 10 }, { cost: 0.1, tokens: 0, turn: 1 }, [
      "task",
    ]);
    holdShare(run, 99, { maxCostUsd: 0.3, maxTokens: 300, maxTurns: 3 });
    const share = start(run, 0);
    expect(share).toMatchObject({ maxTokens: 600, maxTurns: 6 });
    expect(share.maxCostUsd).toBeCloseTo(0.6, 12);
  });

  test("no budget stays none; a budget used up leaves the least share; no turns left is a share of none", () => {
    const none = inBatch({ maxCostUsd: 0 }, { cost: 5, tokens: 5_000, turn: 1 }, ["task"]);
    expect(start(none, 0)).toMatchObject({ maxCostUsd: 0, maxTokens: 0 });
    const usedUp = inBatch({ maxCostUsd: 1, maxTokens: 100 }, { cost: 1.5, tokens: 150, turn: 1 }, ["task"]);
    expect(start(usedUp, 0)).toMatchObject({ maxCostUsd: LEAST_COST_SHARE_USD, maxTokens: 1 });
    // Two turns left for three calls: the earlier calls get them, the last none (it is not started).
    const turns = inBatch({ maxTurns: 3 }, { cost: 0, tokens: 0, turn: 1 }, ["task", "task", "task"]);
    expect([0, 1, 2].map((index) => start(turns, index).maxTurns)).toEqual([1, 1, 0]);
    turns.subAgentTurns = 2;
    releaseShare(turns, turns.batch[0]?.slot.seq ?? -1);
    releaseShare(turns, turns.batch[1]?.slot.seq ?? -1);
    expect(childShare(turns, turns.batch[2]?.slot.seq ?? -1).maxTurns).toBe(0);
  });

  test("runs from before shares gave each child all the parent had left, and its whole token budget", () => {
    const run = inBatch(
      { maxCostUsd: 0.11, maxTokens: 110_000, maxTurns: 50 },
      { cost: 0.01, tokens: 100_000, turn: 1 },
      ["task", "task"],
    );
    run.subAgentTurns = 4;
    expect(wholeBudgetLeft(run, true)).toEqual({ maxCostUsd: 0.11 - 0.01, maxTokens: 110_000, maxTurns: 45 });
    expect(wholeBudgetLeft(run, false).maxTurns).toBe(50);
    run.usage = { ...run.usage, cost: { ...run.usage.cost, total: 0.2 } };
    expect(wholeBudgetLeft(run, true).maxCostUsd).toBe(LEAST_COST_SHARE_USD);
  });
});
