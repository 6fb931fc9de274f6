/** An eval's numbers: trial order, the Wilson interval, the report and the comparison of two evals. */
import { DEFAULT_RUN_SETTINGS } from "../../../src/contracts/runs";
import { type StoredEval, trialCount, trialPlan, trialRun } from "../../../src/evals/eval-store";
import { compareReports, evalReport, wilsonInterval } from "../../../src/evals/report";
import type { TrialResult } from "../../../src/evals/types";

const stored = (models: string[], caseIds: string[], repeat: number): StoredEval => ({
  evalId: "ev1",
  tenantId: "t",
  createdAt: "2026-12-06T00:00:00.000Z",
  models,
  repeat,
  concurrency: 2,
  cases: caseIds.map((id) => ({ id, prompt: id, checks: [], settings: DEFAULT_RUN_SETTINGS })),
});

function trial(eval_: StoredEval, index: number, passed: boolean, costUsd = 0.01): TrialResult {
  return {
    ...trialPlan(eval_, index),
    sessionId: `s${index}`,
    status: "completed",
    passed,
    checks: passed
      ? []
      : [{ check: { type: "command", command: "make test" }, passed: false, detail: "exit 2" }],
    turns: 2,
    toolCalls: 1,
    tokens: { input: 100, output: 10 },
    costUsd,
    durationMs: 1000,
    finishedAt: "2026-12-06T00:01:00.000Z",
  };
}

test("trials run case by case, each case's models, each model's repeats", () => {
  const eval_ = stored(["a", "b"], ["c1", "c2"], 3);
  expect(trialCount(eval_)).toBe(12);
  const plans = Array.from({ length: 12 }, (_, index) => trialPlan(eval_, index));
  expect(plans.map((plan) => `${plan.caseId}/${plan.model}/${plan.repeat}`)).toEqual([
    "c1/a/0",
    "c1/a/1",
    "c1/a/2",
    "c1/b/0",
    "c1/b/1",
    "c1/b/2",
    "c2/a/0",
    "c2/a/1",
    "c2/a/2",
    "c2/b/0",
    "c2/b/1",
    "c2/b/2",
  ]);
  expect(() => trialPlan(eval_, 12)).toThrow(RangeError);
  // A case's settings are stored once; each trial runs them with its own model.
  expect(trialRun(eval_, 4)).toMatchObject({ evalCase: { id: "c1" }, settings: { model: "b" } });
  expect(trialRun(eval_, 6).settings).toEqual({ ...DEFAULT_RUN_SETTINGS, model: "a" });
});

test("the Wilson interval: known values, and never outside [0, 1]", () => {
  // 8 of 10: 0.4902 … 0.9433 (the textbook 95 % score interval).
  const [low, high] = wilsonInterval(8, 10);
  expect(low).toBeCloseTo(0.4902, 3);
  expect(high).toBeCloseTo(0.9433, 3);
  expect(wilsonInterval(0, 5)[0]).toBe(0);
  expect(wilsonInterval(5, 5)[1]).toBeCloseTo(1, 10);
  expect(wilsonInterval(0, 0)).toEqual([0, 1]);
  // More trials, a narrower interval around the same rate.
  const narrow = wilsonInterval(80, 100);
  expect(narrow[1] - narrow[0]).toBeLessThan(high - low);
});

test("the report: per model, per case, and the failing trials with what failed", () => {
  const eval_ = stored(["a", "b"], ["c1", "c2"], 2);
  // a passes everything; b passes c2 once.
  const passes = [true, true, false, false, true, true, true, false];
  const results = passes.map((passed, index) => trial(eval_, index, passed));
  const report = evalReport(eval_, results.slice(0, 7));
  expect(report.trials).toBe(8);
  expect(report.finished).toBe(7);
  const [a, b] = report.models;
  expect(a).toMatchObject({ model: "a", trials: 4, finished: 4, passed: 4, passRate: 1 });
  expect(b).toMatchObject({ model: "b", trials: 4, finished: 3, passed: 1 });
  expect(b?.passRate).toBeCloseTo(1 / 3);
  expect(a?.costUsd).toBeCloseTo(0.04);
  expect(
    report.cases.map((row) => row.results.map((result) => `${result.passed}/${result.finished}`)),
  ).toEqual([
    ["2/2", "0/2"],
    ["2/2", "1/1"],
  ]);
  expect(report.failing.map((failing) => [failing.caseId, failing.model, failing.sessionId])).toEqual([
    ["c1", "b", "s2"],
    ["c1", "b", "s3"],
  ]);
  expect(report.failing[0]?.failed).toEqual(["command `make test`: exit 2"]);
});

test("comparing two evals names the cases whose pass rate changed, per model both ran", () => {
  const before = stored(["a", "b"], ["c1", "c2"], 1);
  const after = { ...stored(["a", "c"], ["c1", "c2", "c3"], 1), evalId: "ev2" };
  const beforeReport = evalReport(before, [
    trial(before, 0, true),
    trial(before, 1, true),
    trial(before, 2, false),
  ]);
  const afterReport = evalReport(after, [
    trial(after, 0, false),
    trial(after, 2, true),
    trial(after, 4, true),
  ]);
  const comparison = compareReports(beforeReport, afterReport);
  expect(comparison.models.map((model) => model.model)).toEqual(["a"]);
  expect(comparison.changes).toEqual([
    { caseId: "c1", model: "a", before: { passed: 1, finished: 1 }, after: { passed: 0, finished: 1 } },
    { caseId: "c2", model: "a", before: { passed: 0, finished: 1 }, after: { passed: 1, finished: 1 } },
  ]);
});
