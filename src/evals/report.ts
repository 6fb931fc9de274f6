/**
 * An eval's numbers from its trials' stored results: pure functions, shared by the API (`GET
 * /v1/evals/{id}`), the CLI and the report page, so every view of an eval says the same.
 */
import type { SessionEntry } from "../core/session-types";
import type { StoredEval } from "./eval-store";
import type { CheckOutcome, EvalCheck, TrialResult } from "./types";

/** What a trial's run did, from its session's entries (those after the fork point only). */
export interface RunSummary {
  turns: number;
  toolCalls: number;
  tokens: { input: number; output: number };
  costUsd: number;
}

/** Sums the assistant messages of `entries` from index `firstOwn` on (before it: inherited by a fork). */
export function summarizeRun(entries: readonly SessionEntry[], firstOwn = 0): RunSummary {
  const summary: RunSummary = { turns: 0, toolCalls: 0, tokens: { input: 0, output: 0 }, costUsd: 0 };
  for (const entry of entries.slice(firstOwn)) {
    if (entry.type !== "message" || entry.message.role !== "assistant") continue;
    const message = entry.message;
    summary.turns += 1;
    summary.toolCalls += message.content.filter((block) => block.type === "toolCall").length;
    summary.tokens.input += message.usage.input + message.usage.cacheRead + message.usage.cacheWrite;
    summary.tokens.output += message.usage.output;
    summary.costUsd += message.usage.cost.total;
  }
  return summary;
}

/** The outcome of a check the run's numbers decide; undefined for one that runs in the sandbox. */
export function judgeByNumbers(check: EvalCheck, summary: RunSummary): CheckOutcome | undefined {
  switch (check.type) {
    case "maxCostUsd":
      return {
        check,
        passed: summary.costUsd <= check.value,
        detail: `cost USD ${summary.costUsd.toFixed(6)} (at most ${check.value})`,
      };
    case "maxTurns":
      return {
        check,
        passed: summary.turns <= check.value,
        detail: `${summary.turns} turns (at most ${check.value})`,
      };
    default:
      return undefined;
  }
}

/** A 95 % Wilson score interval for `passed` of `n`: [low, high]; [0, 1] when n is 0. */
export function wilsonInterval(passed: number, n: number, z = 1.96): [number, number] {
  if (n === 0) return [0, 1];
  const p = passed / n;
  const z2 = z * z;
  const denominator = 1 + z2 / n;
  const center = (p + z2 / (2 * n)) / denominator;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denominator;
  return [Math.max(0, center - half), Math.min(1, center + half)];
}

interface ModelSummary {
  model: string;
  /** Trials planned for this model, and how many have a result. */
  trials: number;
  finished: number;
  passed: number;
  /** passed / finished (0 with none finished), and its 95 % Wilson interval. */
  passRate: number;
  interval: [number, number];
  costUsd: number;
  tokens: { input: number; output: number };
  meanTurns: number;
  meanDurationMs: number;
}

interface CaseRow {
  caseId: string;
  /** Per model, in the eval's order: passed / finished of its repeats. */
  results: Array<{ model: string; passed: number; finished: number; sessions: string[] }>;
}

interface FailingTrial {
  index: number;
  caseId: string;
  model: string;
  repeat: number;
  sessionId: string;
  status: string;
  reason?: string;
  /** The checks that failed, in a line each. */
  failed: string[];
}

export interface EvalReport {
  evalId: string;
  name?: string;
  createdAt: string;
  trials: number;
  finished: number;
  costUsd: number;
  models: ModelSummary[];
  cases: CaseRow[];
  failing: FailingTrial[];
}

/** One line naming a check, for failure lists. */
function describeCheck(check: EvalCheck): string {
  switch (check.type) {
    case "command":
      return `command \`${check.command}\``;
    case "file":
      return `file ${check.path}`;
    case "maxCostUsd":
      return `cost at most USD ${check.value}`;
    case "maxTurns":
      return `at most ${check.value} turns`;
  }
}

/** The eval's numbers: per model, per case, and every failing trial with its session. */
export function evalReport(stored: StoredEval, results: readonly TrialResult[]): EvalReport {
  const perModel = stored.cases.length * stored.repeat;
  const models = stored.models.map((model): ModelSummary => {
    const own = results.filter((result) => result.model === model);
    const passed = own.filter((result) => result.passed).length;
    const sum = (pick: (result: TrialResult) => number) =>
      own.reduce((total, result) => total + pick(result), 0);
    return {
      model,
      trials: perModel,
      finished: own.length,
      passed,
      passRate: own.length === 0 ? 0 : passed / own.length,
      interval: wilsonInterval(passed, own.length),
      costUsd: sum((result) => result.costUsd),
      tokens: { input: sum((result) => result.tokens.input), output: sum((result) => result.tokens.output) },
      meanTurns: own.length === 0 ? 0 : sum((result) => result.turns) / own.length,
      meanDurationMs: own.length === 0 ? 0 : sum((result) => result.durationMs) / own.length,
    };
  });
  const cases = stored.cases.map(
    (evalCase): CaseRow => ({
      caseId: evalCase.id,
      results: stored.models.map((model) => {
        const own = results.filter((result) => result.caseId === evalCase.id && result.model === model);
        return {
          model,
          passed: own.filter((result) => result.passed).length,
          finished: own.length,
          sessions: own.map((result) => result.sessionId),
        };
      }),
    }),
  );
  const failing = results
    .filter((result) => !result.passed)
    .map(
      (result): FailingTrial => ({
        index: result.index,
        caseId: result.caseId,
        model: result.model,
        repeat: result.repeat,
        sessionId: result.sessionId,
        status: result.status,
        ...(result.reason !== undefined ? { reason: result.reason } : {}),
        failed: result.checks
          .filter((outcome) => !outcome.passed)
          .map((outcome) => `${describeCheck(outcome.check)}: ${outcome.detail}`),
      }),
    );
  return {
    evalId: stored.evalId,
    ...(stored.name !== undefined ? { name: stored.name } : {}),
    createdAt: stored.createdAt,
    trials: perModel * stored.models.length,
    finished: results.length,
    costUsd: results.reduce((total, result) => total + result.costUsd, 0),
    models,
    cases,
    failing,
  };
}

interface CaseChange {
  caseId: string;
  model: string;
  before: { passed: number; finished: number };
  after: { passed: number; finished: number };
}

/**
 * What changed from eval `before` to eval `after`: per model both ran, its summaries side by
 * side, and the cases (by id) whose pass rate differs.
 */
export function compareReports(before: EvalReport, after: EvalReport) {
  const models = after.models.flatMap((summary) => {
    const earlier = before.models.find((candidate) => candidate.model === summary.model);
    return earlier ? [{ model: summary.model, before: earlier, after: summary }] : [];
  });
  const changes: CaseChange[] = [];
  for (const row of after.cases) {
    const earlierRow = before.cases.find((candidate) => candidate.caseId === row.caseId);
    if (!earlierRow) continue;
    for (const result of row.results) {
      const earlier = earlierRow.results.find((candidate) => candidate.model === result.model);
      if (!earlier || earlier.finished === 0 || result.finished === 0) continue;
      if (earlier.passed / earlier.finished === result.passed / result.finished) continue;
      changes.push({
        caseId: row.caseId,
        model: result.model,
        before: { passed: earlier.passed, finished: earlier.finished },
        after: { passed: result.passed, finished: result.finished },
      });
    }
  }
  return { before: before.evalId, after: after.evalId, models, changes };
}
