/**
 * An eval: every trial (case × model × repeat) run as a run of its own through the one start
 * path, at most `concurrency` at a time, then judged (docs/evals.md). Durable like a run: a worker
 * or the API dying costs a retried activity, never a trial run again — a trial's start is
 * idempotent by its delivery id, its wait follows the run to its end, and its judged result is
 * stored once. Once the finished trials cost the eval's budget no new trial starts: the eval is
 * `paused` until the `evalBudget` signal raises or lifts the budget. Cancelled, it aborts the
 * trials' runs still going and ends as `cancelled`.
 */
import {
  CancellationScope,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  isCancellation,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from "@temporalio/workflow";
import type { EvalActivities, ScheduledRunActivities } from "../contracts/activities";
import {
  EVAL_BUDGET_SIGNAL,
  EVAL_PROGRESS_QUERY,
  type EvalBudgetChange,
  type EvalProgress,
  type EvalRunInput,
  type EvalRunResult,
} from "../contracts/evals";

const RETRY = { initialInterval: "1 second", maximumInterval: "30 seconds" } as const;

/**
 * A start forks a session and starts a run; a judge restores a workspace and runs the checks
 * (each at most an hour). Both heartbeat while they work, so a dead worker's attempt moves to
 * another within seconds.
 */
const quick = proxyActivities<EvalActivities & ScheduledRunActivities>({
  startToCloseTimeout: "2 hours",
  heartbeatTimeout: "15 seconds",
  retry: RETRY,
});

/** The wait lasts as long as the trial's run; its heartbeats move it off a dead worker within seconds. */
const waiting = proxyActivities<ScheduledRunActivities>({
  startToCloseTimeout: "30 days",
  heartbeatTimeout: "20 seconds",
  retry: RETRY,
});

const evalProgressQuery = defineQuery<EvalProgress>(EVAL_PROGRESS_QUERY);
const evalBudgetSignal = defineSignal<[EvalBudgetChange]>(EVAL_BUDGET_SIGNAL);

/** Events after which the eval continues as new once its running trials end (far below Temporal's limits). */
const HISTORY_EVENTS_PER_EXECUTION = 20_000;

export async function evalRun(input: EvalRunInput): Promise<EvalRunResult> {
  const { tenantId, evalId, trials } = input;
  const counts = { next: 0, finished: 0, passed: 0, costUsd: 0, ...input.carried };
  let maxCostUsd = input.maxCostUsd;
  let held: string | undefined;
  let cancelled = false;
  const running = new Map<number, string>();
  const overBudget = () => maxCostUsd !== undefined && maxCostUsd > 0 && counts.costUsd >= maxCostUsd;
  const progress = (): EvalProgress => ({
    state: cancelled
      ? "cancelled"
      : counts.finished === trials
        ? "completed"
        : overBudget() && counts.next < trials
          ? "paused"
          : "running",
    trials,
    started: counts.next,
    finished: counts.finished,
    passed: counts.passed,
    costUsd: counts.costUsd,
    ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
    ...(held !== undefined ? { held } : {}),
  });
  setHandler(evalProgressQuery, progress);
  setHandler(evalBudgetSignal, (change) => {
    maxCostUsd = change.maxCostUsd;
  });

  const judged = (result: { passed: boolean; costUsd: number }) => {
    counts.finished += 1;
    if (result.passed) counts.passed += 1;
    counts.costUsd += result.costUsd;
  };

  async function runTrial(index: number): Promise<void> {
    for (;;) {
      const started = await quick.startEvalTrial({ tenantId, evalId, index });
      if (started.type === "held") {
        held = started.message;
        await sleep(Math.min(60, Math.max(2, started.retryAfterSeconds)) * 1000);
        continue;
      }
      held = undefined;
      if (started.type === "refused") {
        const at = Date.now();
        const base = { tenantId, evalId, index, sessionId: started.sessionId, inherited: 0, startedAtMs: at };
        judged(await quick.judgeEvalTrial({ ...base, status: "not-started", reason: started.message }));
        return;
      }
      running.set(index, started.sessionId);
      const end = await waiting.awaitScheduledRun({
        tenantId,
        sessionId: started.sessionId,
        runId: started.runId,
      });
      running.delete(index);
      judged(
        await quick.judgeEvalTrial({
          tenantId,
          evalId,
          index,
          sessionId: started.sessionId,
          status: end.status,
          reason: end.reason,
          inherited: started.inherited,
          startedAtMs: started.startedAtMs,
        }),
      );
      return;
    }
  }

  const historyFull = () =>
    workflowInfo().historyLength > HISTORY_EVENTS_PER_EXECUTION || workflowInfo().continueAsNewSuggested;

  /** One lane: takes the next trial while there is one, the budget allows and the history has room. */
  async function lane(): Promise<void> {
    for (;;) {
      await condition(() => !overBudget() || counts.next >= trials);
      if (counts.next >= trials || historyFull()) return;
      const index = counts.next;
      counts.next += 1;
      await runTrial(index);
    }
  }

  try {
    await Promise.all(Array.from({ length: Math.max(1, input.concurrency) }, () => lane()));
  } catch (error) {
    if (!isCancellation(error)) throw error;
    cancelled = true;
    // The trials' runs would go on spending: each gets the abort, and the eval ends.
    await CancellationScope.nonCancellable(() =>
      Promise.all(
        [...running.values()].map((sessionId) =>
          quick.abortScheduledRun({ tenantId, sessionId, reason: "the eval was cancelled" }),
        ),
      ),
    );
    const { held: _held, started: _started, ...result } = progress();
    return result;
  }
  if (counts.next < trials) {
    const { maxCostUsd: _started, ...rest } = input;
    await continueAsNew<typeof evalRun>({
      ...rest,
      ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
      carried: counts,
    });
  }
  const { held: _held, started: _started, ...result } = progress();
  return result;
}
