/**
 * Eval routes (docs/evals.md): start an eval of a suite against models, list a tenant's evals,
 * read one (its progress and report), change its budget, cancel it. Each case × model is checked
 * as the message that starts its runs would be (`tenantRunRequest`: the tenant's defaults and
 * allowed models, network, secrets, environment), so an eval starts only runs the tenant could
 * start by hand, and the stored eval holds every trial's run settings.
 */
import { randomBytes } from "node:crypto";
import { createRoute, z } from "@hono/zod-openapi";
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from "@temporalio/client";
import {
  EVAL_BUDGET_SIGNAL,
  EVAL_PROGRESS_QUERY,
  type EvalProgress,
  type EvalRunInput,
  type EvalRunResult,
  evalWorkflowId,
} from "../../contracts/evals";
import type { RunSettings } from "../../contracts/runs";
import { pathToRoot, type SessionIndex } from "../../core/session-tree";
import { type StoredEval, trialCount } from "../../evals/eval-store";
import { type EvalReport, evalReport } from "../../evals/report";
import { evalRequestSchema, MAX_EVAL_TRIALS } from "../../evals/types";
import { WorkflowType } from "../../workflows/references";
import { unattendedSettings } from "../../workflows/schedules";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import { reportedIssues } from "../schema-issues";
import { messageBodySchema, runModelSchema } from "../schemas";
import { withTenantSettings } from "../tenant-runs";
import { idempotencyHeaderParam, problemResponses } from "./common";
import { sessionIndexOf } from "./new-session";
import { messageBodyOptions, tenantRunRequest } from "./runs";

const json = <T>(schema: T) => ({ content: { "application/json": { schema } } });

const EvalParamsSchema = z.object({
  evalId: z
    .string()
    .regex(/^ev[0-9a-f]{16}$/)
    .openapi({ param: { name: "evalId", in: "path" }, example: "ev0123456789abcdef" }),
});

const EvalStartedSchema = z.object({ evalId: z.string(), trials: z.number().int(), workflowId: z.string() });
const EvalProgressSchema = z.object({
  state: z.enum(["running", "paused", "completed", "cancelled"]),
  trials: z.number().int(),
  finished: z.number().int(),
  passed: z.number().int(),
  costUsd: z.number(),
  maxCostUsd: z.number().optional(),
  held: z.string().optional(),
});
const EvalSummarySchema = z.object({
  evalId: z.string(),
  name: z.string().optional(),
  createdAt: z.string(),
  models: z.array(z.string()),
  cases: z.number().int(),
  repeat: z.number().int(),
  trials: z.number().int(),
});
const EvalViewSchema = z
  .object({
    eval: EvalSummarySchema,
    progress: EvalProgressSchema,
    report: z.record(z.string(), z.unknown()).optional(),
  })
  .openapi("Eval", {
    description:
      "`report` (absent with `?report=false`, which reads no trial result: for polling): per model (pass rate and its 95 % Wilson interval, cost, tokens, mean turns and time), per case, and every failing trial with its session (docs/evals.md)",
  });
const EvalBudgetBodySchema = z.object({
  maxCostUsd: z.number().min(0).max(1_000_000).optional().openapi({
    description: "The eval's new budget in US dollars; absent (or 0): no budget, a paused eval goes on",
  }),
});
const AcceptedEvalSchema = z.object({ evalId: z.string(), accepted: z.literal(true) });

const startEval = (model: z.ZodType<string>) =>
  createRoute({
    method: "post",
    path: "/v1/evals",
    summary: "Start an eval: every case × model × repeat of the suite as a run, judged by the case's checks",
    request: { body: { required: true, ...json(evalRequestSchema(model)) } },
    responses: {
      201: { description: "Started", ...json(EvalStartedSchema) },
      ...problemResponses(403, 413, 415, 422),
    },
    parameters: [idempotencyHeaderParam],
  });

const listEvals = createRoute({
  method: "get",
  path: "/v1/evals",
  summary: "The tenant's evals, newest first (at most 50)",
  responses: {
    200: { description: "Evals", ...json(z.object({ evals: z.array(EvalSummarySchema) })) },
    ...problemResponses(),
  },
});

const getEval = createRoute({
  method: "get",
  path: "/v1/evals/{evalId}",
  summary: "An eval: its progress and its report so far",
  request: {
    params: EvalParamsSchema,
    query: z.object({ report: z.enum(["true", "false"]).optional() }),
  },
  responses: { 200: { description: "The eval", ...json(EvalViewSchema) }, ...problemResponses() },
});

const budgetEval = createRoute({
  method: "post",
  path: "/v1/evals/{evalId}/budget",
  summary: "Change (or lift) the eval's budget: a paused eval under its new budget goes on",
  request: { params: EvalParamsSchema, body: { required: false, ...json(EvalBudgetBodySchema) } },
  responses: {
    202: { description: "Sent", ...json(AcceptedEvalSchema) },
    ...problemResponses(409, 413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

const cancelEval = createRoute({
  method: "post",
  path: "/v1/evals/{evalId}/cancel",
  summary: "Cancel the eval: no trial starts, the trials' runs still going are aborted",
  request: { params: EvalParamsSchema },
  responses: { 202: { description: "Sent", ...json(AcceptedEvalSchema) }, ...problemResponses(409, 422) },
  parameters: [idempotencyHeaderParam],
});

const summaryOf = (stored: StoredEval): z.infer<typeof EvalSummarySchema> => ({
  evalId: stored.evalId,
  ...(stored.name !== undefined ? { name: stored.name } : {}),
  createdAt: stored.createdAt,
  models: stored.models,
  cases: stored.cases.length,
  repeat: stored.repeat,
  trials: trialCount(stored),
});

export function evalRoutes(deps: RouteContext) {
  const bodyOptions = messageBodyOptions(deps);
  const bodySchema = messageBodySchema(bodyOptions);
  const evals = () => {
    if (!deps.evals) throw new ProblemError("not-implemented", "This deployment keeps no evals.");
    return deps.evals;
  };
  const requireEval = async (tenantId: string, evalId: string) => {
    const stored = await evals().get(tenantId, evalId);
    if (!stored) throw new ProblemError("eval-not-found", `No eval ${JSON.stringify(evalId)}.`);
    return stored;
  };
  const handle = async (tenantId: string, evalId: string) => {
    const runs = await deps.runs();
    return runs.client.workflow.getHandle(evalWorkflowId(tenantId, evalId));
  };

  /** The eval's workflow while it runs; 409 once it has closed (Temporal would take a cancel of it silently). */
  const running = async (tenantId: string, evalId: string) => {
    const workflow = await handle(tenantId, evalId);
    const description = await workflow.describe().catch(endedEval);
    if (description.status.name !== "RUNNING")
      endedEval(new WorkflowNotFoundError("closed", workflow.workflowId, undefined));
    return workflow;
  };

  /**
   * The eval's workflow's own count: its answer while it runs, its result once completed;
   * undefined once it was cancelled, terminated or is gone (its trials' results say the rest).
   * Read before the trials' results: a trial is stored before the workflow counts it, so the
   * results read after are at least as many as the count says (a completed eval's are all there).
   */
  async function workflowProgress(stored: StoredEval): Promise<EvalProgress | EvalRunResult | undefined> {
    const workflow = await handle(stored.tenantId, stored.evalId);
    const description = await workflow.describe().catch((error: unknown) => {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    });
    if (description?.status.name === "RUNNING") return workflow.query<EvalProgress>(EVAL_PROGRESS_QUERY);
    if (description?.status.name === "COMPLETED") return (await workflow.result()) as EvalRunResult;
    return undefined;
  }

  return createRouter()
    .openapi(startEval(runModelSchema(bodyOptions)), async (c) => {
      const tenantId = c.get("tenantId");
      const request = c.req.valid("json");
      // A model named twice is one model of the comparison.
      const models = [...new Set(request.models)];
      const trials = request.suite.cases.length * models.length * request.repeat;
      if (trials > MAX_EVAL_TRIALS)
        throw new ProblemError(
          "invalid-eval",
          `An eval runs at most ${MAX_EVAL_TRIALS} trials; this one ${trials}.`,
          {
            errors: [{ path: "repeat", message: `cases × models × repeat is ${trials}` }],
          },
        );
      const ids = request.suite.cases.map((evalCase) => evalCase.id);
      const repeated = ids.find((id, index) => ids.indexOf(id) !== index);
      if (repeated !== undefined)
        throw new ProblemError("invalid-eval", `Two cases have the id ${JSON.stringify(repeated)}.`, {
          errors: [{ path: "suite.cases", message: "case ids must be unique" }],
        });
      const cases: StoredEval["cases"] = [];
      // Read once for the whole suite: the tenant's settings, and each origin session's entries.
      const tenantSettings = (await deps.tenants?.store.getSettings(tenantId)) ?? {};
      const origins = new Map<string, Promise<SessionIndex>>();
      for (const [caseIndex, evalCase] of request.suite.cases.entries()) {
        if (evalCase.from) {
          const origin = { tenantId, sessionId: evalCase.from.sessionId };
          let index = origins.get(origin.sessionId);
          if (!index) {
            index = sessionIndexOf(deps, origin);
            origins.set(origin.sessionId, index);
          }
          if (pathToRoot((await index).byId, evalCase.from.entryId).length === 0)
            throw new ProblemError(
              "entry-not-found",
              `Case ${evalCase.id}: no entry ${evalCase.from.entryId} in session ${evalCase.from.sessionId}.`,
            );
        }
        // Checked for every model as its message would be (the first fully: secrets, environment;
        // the others for their model); stored once, each trial with its own model.
        let settings: RunSettings | undefined;
        for (const model of models) {
          const parsed = bodySchema.safeParse({
            ...request.suite.settings,
            ...evalCase.settings,
            text: evalCase.prompt,
            model,
          });
          if (!parsed.success)
            throw new ProblemError(
              "invalid-request",
              `Case ${evalCase.id} with model ${model} is not a run Keel can start.`,
              {
                errors: reportedIssues(parsed.error.issues).map((issue) => ({
                  path: `suite.cases.${caseIndex}.${issue.path}`,
                  message: issue.message,
                })),
              },
            );
          if (settings) {
            withTenantSettings(tenantSettings, parsed.data, bodyOptions, deps.config.defaultModel);
            continue;
          }
          const run = await tenantRunRequest(
            deps,
            tenantId,
            parsed.data,
            bodyOptions,
            `eval case ${evalCase.id}`,
            tenantSettings,
          );
          settings = trialSettings(run.settings, parsed.data.limits?.pauseTimeoutSeconds !== undefined);
        }
        if (!settings) throw new Error("an eval has at least one model");
        cases.push({
          id: evalCase.id,
          prompt: evalCase.prompt,
          ...(evalCase.from ? { from: evalCase.from } : {}),
          checks: evalCase.checks,
          settings,
        });
      }
      const evalId = `ev${randomBytes(8).toString("hex")}`;
      const stored: StoredEval = {
        evalId,
        tenantId,
        ...(request.suite.name !== undefined ? { name: request.suite.name } : {}),
        createdAt: new Date(deps.now()).toISOString(),
        models,
        repeat: request.repeat,
        concurrency: request.concurrency,
        ...(request.maxCostUsd !== undefined ? { maxCostUsd: request.maxCostUsd } : {}),
        cases,
      };
      await evals().create(stored);
      const input: EvalRunInput = {
        tenantId,
        evalId,
        trials,
        concurrency: request.concurrency,
        ...(request.maxCostUsd !== undefined ? { maxCostUsd: request.maxCostUsd } : {}),
      };
      const runs = await deps.runs();
      const workflowId = evalWorkflowId(tenantId, evalId);
      await runs.client.workflow
        .start(WorkflowType.evalRun, { workflowId, taskQueue: runs.taskQueue, args: [input] })
        .catch((error: unknown) => {
          if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        });
      return c.json({ evalId, trials, workflowId }, 201);
    })
    .openapi(listEvals, async (c) => {
      const found = await evals().list(c.get("tenantId"));
      return c.json({ evals: found.map(summaryOf) }, 200);
    })
    .openapi(getEval, async (c) => {
      const { evalId } = c.req.valid("param");
      const stored = await requireEval(c.get("tenantId"), evalId);
      const wanted = c.req.valid("query").report !== "false";
      const counted = await workflowProgress(stored);
      // The report reads every trial's result (one GET each): only when asked, or when the
      // workflow can no longer count for it.
      const report =
        wanted || !counted ? evalReport(stored, await evals().trials(stored.tenantId, evalId)) : undefined;
      // `started` is the workflow's own bookkeeping (trials taken), not part of the answer.
      const { started: _started, ...progress }: Partial<EvalProgress> & EvalRunResult =
        counted ?? closedProgress(report as EvalReport);
      return c.json(
        { eval: summaryOf(stored), progress, ...(wanted && report ? { report: { ...report } } : {}) },
        200,
      );
    })
    .openapi(budgetEval, async (c) => {
      const { evalId } = c.req.valid("param");
      const stored = await requireEval(c.get("tenantId"), evalId);
      const body = c.req.valid("json") ?? {};
      const workflow = await running(stored.tenantId, evalId);
      await workflow
        .signal(EVAL_BUDGET_SIGNAL, body.maxCostUsd ? { maxCostUsd: body.maxCostUsd } : {})
        .catch(endedEval);
      return c.json({ evalId, accepted: true as const }, 202);
    })
    .openapi(cancelEval, async (c) => {
      const { evalId } = c.req.valid("param");
      const stored = await requireEval(c.get("tenantId"), evalId);
      await (await running(stored.tenantId, evalId)).cancel().catch(endedEval);
      return c.json({ evalId, accepted: true as const }, 202);
    });
}

/**
 * A trial's run settings: nobody watches a trial, so an approval it asks for is refused (as an
 * unattended schedule's `deny`), and a trial that reaches its own cost or token budget ends at
 * once instead of waiting a day paused (unless the case set `pauseTimeoutSeconds`): its checks
 * judge it as it stands.
 */
function trialSettings(settings: RunSettings, pauseTimeoutGiven: boolean): RunSettings {
  const unattended = unattendedSettings(settings, "deny", false);
  const budgeted = unattended.limits.maxCostUsd > 0 || (unattended.limits.maxTokens ?? 0) > 0;
  if (!budgeted || pauseTimeoutGiven) return unattended;
  return { ...unattended, limits: { ...unattended.limits, pauseTimeoutSeconds: 1 } };
}

/** What an eval whose workflow is gone (cancelled, terminated) finished, from its stored trials. */
function closedProgress(report: EvalReport): EvalProgress {
  return {
    state: "cancelled",
    trials: report.trials,
    started: report.finished,
    finished: report.finished,
    passed: report.models.reduce((total, model) => total + model.passed, 0),
    costUsd: report.costUsd,
  };
}

/** A signal or cancel to an eval whose workflow has closed: 409. */
function endedEval(error: unknown): never {
  if (error instanceof WorkflowNotFoundError)
    throw new ProblemError("eval-ended", "The eval has ended; its results stay readable.");
  throw error;
}
