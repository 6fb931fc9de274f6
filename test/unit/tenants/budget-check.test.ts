/**
 * The workers' view of a tenant's budget, without a server: the tenant's usage (a fake ledger of
 * days) against its quotas, answered from a short cache unless asked afresh.
 */
import { describeTenantBudget, TenantBudgetCheck } from "../../../src/tenants/budget-check";
import type { TenantSettings } from "../../../src/tenants/types";
import type { TenantUsage, UsageDay } from "../../../src/tenants/usage";

const NOW = Date.UTC(2026, 11, 4, 12);

function check(settings: TenantSettings, days: Partial<UsageDay>[], now = () => NOW) {
  const reads = { settings: 0, usage: 0 };
  const totals = days.map((day, index) => ({
    // The last day given is today (NOW's day), the others the days before it.
    day: `2026-12-0${4 - (days.length - 1 - index)}`,
    runs: 0,
    turns: 0,
    tokens: 0,
    costUsd: 0,
    toolSeconds: 0,
    ...day,
  }));
  // The one read tenantBudgetState makes: the month's ledger, a day's totals as the ledger keeps them.
  const usage = {
    month: async () => {
      reads.usage += 1;
      return {
        days: Object.fromEntries(
          totals.map((day) => [
            day.day,
            {
              runs: day.runs,
              turns: day.turns,
              tokens: day.tokens,
              costMicroUsd: Math.round(day.costUsd * 1e6),
              toolMs: day.toolSeconds * 1000,
            },
          ]),
        ),
      };
    },
  } as unknown as TenantUsage;
  const store = {
    getSettings: async () => {
      reads.settings += 1;
      return settings;
    },
  };
  return {
    budget: new TenantBudgetCheck(store, usage, { cacheMs: 10_000, recheckAfterMs: 5_000, now }),
    reads,
  };
}

test("a tenant without token or cost quotas: no usage is read", async () => {
  const { budget, reads } = check({ quotas: { concurrentRuns: 3 } }, [{ tokens: 1e9 }]);
  expect(await budget.reached("t")).toBeUndefined();
  expect(reads).toEqual({ settings: 1, usage: 0 });
});

test("today's tokens over the daily quota hold the run, saying which quota and when it goes on", async () => {
  const { budget } = check({ quotas: { tokensPerDay: 100 } }, [{ tokens: 150 }]);
  expect(await budget.reached("t")).toEqual({
    budget: "tokensPerDay",
    limit: 100,
    used: 150,
    message: describeTenantBudget("tokensPerDay", 100, 150),
    recheckAfterMs: 5_000,
  });
  expect(describeTenantBudget("tokensPerDay", 100, 150)).toBe(
    "the tenant's daily token budget is used up (tokensPerDay 100 tokens; used 150); the run goes on when the operator raises it or the UTC day ends",
  );
});

test("the month's cost over the monthly quota, summed over its days", async () => {
  const { budget } = check({ quotas: { costPerMonthUsd: 5 } }, [{ costUsd: 3 }, { costUsd: 2.5 }]);
  expect(await budget.reached("t")).toMatchObject({ budget: "costPerMonthUsd", limit: 5, used: 5.5 });
  expect(describeTenantBudget("costPerMonthUsd", 5, 5.5)).toMatch(
    /monthly cost budget .*\$5; used \$5\.5000.*UTC month ends/,
  );
});

test("under every quota: nothing holds the run", async () => {
  const { budget } = check({ quotas: { tokensPerDay: 100, costPerDayUsd: 1 } }, [
    { tokens: 99, costUsd: 0.5 },
  ]);
  expect(await budget.reached("t")).toBeUndefined();
});

test("answers are reused for the cache time, unless asked afresh", async () => {
  let now = NOW;
  const { budget, reads } = check({ quotas: { tokensPerDay: 100 } }, [{ tokens: 150 }], () => now);
  await budget.reached("t");
  await budget.reached("t");
  expect(reads.settings).toBe(1);
  await budget.reached("t", { fresh: true });
  expect(reads.settings).toBe(2);
  now += 10_001;
  await budget.reached("t");
  expect(reads.settings).toBe(3);
});

test("a tenant's asks at one moment share one read; a read that fails is not kept", async () => {
  const { budget, reads } = check({ quotas: { tokensPerDay: 100 } }, [{ tokens: 150 }]);
  const [first, second] = await Promise.all([budget.reached("t"), budget.reached("t")]);
  expect(first).toEqual(second);
  expect(reads.settings).toBe(1);

  let settingsReads = 0;
  const store = {
    getSettings: async () => {
      settingsReads += 1;
      if (settingsReads === 1) throw new Error("S3 down");
      return { quotas: { concurrentRuns: 3 } };
    },
  };
  const flaky = new TenantBudgetCheck(store, {} as TenantUsage, { now: () => NOW });
  await expect(flaky.reached("t")).rejects.toThrow("S3 down");
  expect(await flaky.reached("t")).toBeUndefined();
  expect(settingsReads).toBe(2);
});
