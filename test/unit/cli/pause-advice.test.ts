/** What `keel show` and a followed run say about a pause: whose budget, and the command that goes on. */
import { costOption } from "../../../src/cli/commands/message";
import { pauseAdvice, suggestedRaise } from "../../../src/cli/pause-advice";

test("a run's own cost budget: the cause with its limit and use, a raise the CLI accepts, or a resume", () => {
  const advice = pauseAdvice("s1", { type: "runBudget", budget: "cost", limit: 0.000001, used: 0.000412 });
  expect(advice.cause).toBe("this run's cost budget ($0.000001; used $0.00041)");
  expect(advice.goOn).toBe(
    "keel budget s1 --max-cost 0.00083 (raises it) or keel resume s1 (goes on without it)",
  );
  const amount = advice.goOn.split(" ")[4] ?? "";
  expect(costOption(amount)).toBeGreaterThan(0.000412);
});

test("a use too small for four decimals still shows", () => {
  const advice = pauseAdvice("s1", { type: "runBudget", budget: "cost", limit: 0.000001, used: 0.0000283 });
  expect(advice.cause).toBe("this run's cost budget ($0.000001; used $0.000028)");
  expect(advice.goOn).toContain("--max-cost 0.000057 ");
});

test("a run's own token budget", () => {
  const advice = pauseAdvice("s1", { type: "runBudget", budget: "tokens", limit: 1000, used: 1234 });
  expect(advice.cause).toBe("this run's token budget (1000 tokens; used 1234)");
  expect(advice.goOn).toBe(
    "keel budget s1 --max-tokens 2500 (raises it) or keel resume s1 (goes on without it)",
  );
});

test("the tenant's budget: named, with the operator's command; a resume only asks again", () => {
  const message =
    "the tenant's daily cost budget is used up (costPerDayUsd $1; used $1.0042); the run goes on when the operator raises it or the UTC day ends";
  const advice = pauseAdvice("s1", { type: "tenantBudget", budget: "costPerDayUsd", message });
  expect(advice.cause).toBe(`its tenant's costPerDayUsd quota: ${message}`);
  expect(advice.goOn).toMatch(
    /^after the operator raises costPerDayUsd \(keel admin settings set <tenant> <file\.json>\) or the period ends, keel resume s1 goes on at once/,
  );
  expect(advice.goOn).not.toContain("keel budget");
});

test("a suggested raise is twice the use, rounded up to two significant digits", () => {
  expect(suggestedRaise(0.000405)).toBeCloseTo(0.00081, 10);
  expect(suggestedRaise(2.3)).toBeCloseTo(4.6, 10);
  expect(suggestedRaise(1234)).toBe(2500);
  expect(suggestedRaise(50)).toBe(100);
});
