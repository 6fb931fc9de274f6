/** What an eval's workflow and its clients (the API) agree on: its id, input, queries and signals. */

/** An eval's workflow id: one per tenant and eval. */
export function evalWorkflowId(tenantId: string, evalId: string): string {
  return `keel-eval/${tenantId}/${evalId}`;
}

export interface EvalRunInput {
  tenantId: string;
  evalId: string;
  /** Trials in all (cases × models × repeat); the stored eval says what each runs. */
  trials: number;
  /** Most trials running at once (the tenant's quotas may hold starts back further). */
  concurrency: number;
  /** No trial starts once the finished ones cost this much (US dollars); absent: no budget. */
  maxCostUsd?: number;
  /** Carried across continue-as-new: the next trial to start and the counts so far. */
  carried?: { next: number; finished: number; passed: number; costUsd: number };
}

type EvalRunState = "running" | "paused" | "completed" | "cancelled";

export interface EvalProgress {
  state: EvalRunState;
  trials: number;
  /** Trials started (running or finished) and finished (judged). */
  started: number;
  finished: number;
  passed: number;
  costUsd: number;
  maxCostUsd?: number;
  /** Why starts wait: the tenant's quota that holds them back. */
  held?: string;
}

export type EvalRunResult = Omit<EvalProgress, "held" | "started">;

/** `evalProgress` query and `evalBudget` signal names (the API sends `{maxCostUsd}`; absent lifts the budget). */
export const EVAL_PROGRESS_QUERY = "evalProgress";
export const EVAL_BUDGET_SIGNAL = "evalBudget";
export interface EvalBudgetChange {
  maxCostUsd?: number;
}
