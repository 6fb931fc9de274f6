/**
 * Evaluations: a suite of cases run against models, each case × model × repeat one run (a
 * "trial") under one durable eval workflow, judged by checks run after the run in a sandbox.
 * The schemas here are what the API accepts (`POST /v1/evals`) and what it stores; the CLI's
 * suite file adds local workspace sources, which it uploads first (docs/evals.md).
 */
import { z } from "zod";
import { ID_PATTERN } from "../core/ids";
import { compilesAsRegExp } from "../core/patterns";

/** Most cases in one suite, and most trials (cases × models × repeat) in one eval. */
const MAX_EVAL_CASES = 1_000;
export const MAX_EVAL_TRIALS = 5_000;
/** Longest a command check may run, and what it gets when its case says nothing. */
const MAX_CHECK_TIMEOUT_SECONDS = 3_600;
export const DEFAULT_CHECK_TIMEOUT_SECONDS = 120;

export const EvalCheckSchema = z.discriminatedUnion("type", [
  z
    .object({
      type: z.literal("command"),
      command: z.string().min(1).max(200_000),
      timeoutSeconds: z.number().int().min(1).max(MAX_CHECK_TIMEOUT_SECONDS).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal("file"),
      path: z.string().min(1).max(1_024),
      /** Default true: the file must exist (false: it must not). */
      exists: z.boolean().optional(),
      /** The file's text must contain this. */
      contains: z.string().min(1).max(10_000).optional(),
      /** The file's text must match this regular expression (JavaScript syntax). */
      matches: z
        .string()
        .min(1)
        .max(1_000)
        .refine(compilesAsRegExp, "must be a valid regular expression")
        .optional(),
    })
    .strict(),
  z.object({ type: z.literal("maxCostUsd"), value: z.number().min(0).max(1_000_000) }).strict(),
  z.object({ type: z.literal("maxTurns"), value: z.number().int().min(1).max(100_000) }).strict(),
]);
export type EvalCheck = z.infer<typeof EvalCheckSchema>;

const idString = (what: string) => z.string().regex(ID_PATTERN, `${what} match ${ID_PATTERN.source}`);

/** A stored session's entry a case starts from: a fork there, with the files as they were. */
export const EvalOriginSchema = z
  .object({ sessionId: idString("session ids"), entryId: z.string().min(1).max(64) })
  .strict();

/**
 * One case as the API takes it. `settings` are the run fields of `POST …/messages` (systemPrompt,
 * tools, policy, workspace, limits, hooks, network …; not `text`, `delivery` or `model`), checked
 * as such for every model of the eval; `from` forks a stored session's entry instead of starting
 * an empty session.
 */
const EvalCaseSchema = z
  .object({
    id: idString("case ids"),
    prompt: z.string().min(1).max(100_000),
    settings: z.record(z.string(), z.unknown()).optional(),
    from: EvalOriginSchema.optional(),
    checks: z.array(EvalCheckSchema).max(32).default([]),
  })
  .strict();

const EvalSuiteSchema = z
  .object({
    name: z.string().min(1).max(200).optional(),
    /** Run fields every case starts from (a case's own `settings` go over them). */
    settings: z.record(z.string(), z.unknown()).optional(),
    /** Ids unique (the API refuses a repeated one with 422: no schema can state it of a field). */
    cases: z.array(EvalCaseSchema).min(1).max(MAX_EVAL_CASES),
  })
  .strict();

/**
 * `POST /v1/evals`: the suite, the models to compare (`model`: one model as the deployment takes
 * it for a run), how often each case runs, and a budget.
 */
export function evalRequestSchema(model: z.ZodType<string>) {
  return z
    .object({
      suite: EvalSuiteSchema,
      models: z.array(model).min(1).max(16),
      repeat: z.number().int().min(1).max(100).default(1),
      concurrency: z.number().int().min(1).max(64).default(4),
      /** Pause the eval (no new trial starts) once its finished trials cost this many US dollars. */
      maxCostUsd: z.number().min(0).max(1_000_000).optional(),
    })
    .strict();
}

/** What one trial ran: the settings (as the core's run settings) are kept in the stored eval. */
export interface TrialPlan {
  index: number;
  caseId: string;
  model: string;
  repeat: number;
}

export type CheckOutcome = { check: EvalCheck; passed: boolean; detail: string };

/** The stored result of one trial. */
export interface TrialResult extends TrialPlan {
  sessionId: string;
  /** The run's end: completed, failed, aborted — or `not-started` when the start was refused. */
  status: string;
  reason?: string;
  passed: boolean;
  checks: CheckOutcome[];
  turns: number;
  toolCalls: number;
  tokens: { input: number; output: number };
  costUsd: number;
  durationMs: number;
  finishedAt: string;
}
