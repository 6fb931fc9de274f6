/**
 * Budget routes: change a live run's budgets, and resume a run paused at one (docs/api.md,
 * "Budgets that pause"). Both send the run's `budget` signal, which the server records even with
 * every worker down, then read the run's state until it shows the change.
 */
import { createRoute } from "@hono/zod-openapi";
import type { BudgetRequest, SessionRef } from "../../contracts/runs";
import type { BudgetOutcome } from "../../run-client/run-client";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import { BudgetBodySchema, BudgetChangedSchema, ResumeBodySchema, SessionParamsSchema } from "../schemas";
import { idempotencyHeaderParam, problemResponses, refOf, refuseEndedRun } from "./common";

const answered = {
  description: "Change accepted",
  content: { "application/json": { schema: BudgetChangedSchema } },
};

const setBudget = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/budget",
  summary:
    "Change the live run's budgets (cost, tokens); a run paused at a budget the change lifts goes on at once",
  request: {
    params: SessionParamsSchema,
    body: { required: true, content: { "application/json": { schema: BudgetBodySchema } } },
  },
  responses: { 202: answered, ...problemResponses(409, 413, 415, 422) },
  // Every POST under /v1/sessions takes an Idempotency-Key (src/api/idempotency.ts).
  parameters: [idempotencyHeaderParam],
});

const resume = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/resume",
  summary:
    "Resume a run paused at its budget, optionally with new budgets: a run budget still reached is removed",
  request: {
    params: SessionParamsSchema,
    body: { required: false, content: { "application/json": { schema: ResumeBodySchema } } },
  },
  responses: { 202: answered, ...problemResponses(409, 413, 415, 422) },
  // Every POST under /v1/sessions takes an Idempotency-Key (src/api/idempotency.ts).
  parameters: [idempotencyHeaderParam],
});

/**
 * Sends the request to the session's live run and answers what became of it (the routes here
 * and a Slack thread's `resume`/`budget` reply). Throws `no-active-run` or `session-not-found`.
 */
export async function changeBudget(deps: RouteContext, ref: SessionRef, request: BudgetRequest) {
  const runs = await deps.runs();
  const outcome: BudgetOutcome = await runs.setBudget(ref, request);
  switch (outcome.kind) {
    case "answered": {
      const { state } = outcome;
      return {
        accepted: true as const,
        runId: outcome.runId,
        answered: true,
        status: state.status,
        ...(state.budget ? { budget: state.budget } : {}),
        ...(state.pause ? { pause: state.pause } : {}),
      };
    }
    case "signalled":
      return { accepted: true as const, runId: outcome.runId, answered: false };
  }
  return refuseEndedRun(deps, ref, outcome);
}

export function budgetRoutes(deps: RouteContext) {
  return createRouter()
    .openapi(setBudget, async (c) => {
      const { sessionId } = c.req.valid("param");
      return c.json(await changeBudget(deps, refOf(c, sessionId), c.req.valid("json")), 202);
    })
    .openapi(resume, async (c) => {
      const { sessionId } = c.req.valid("param");
      return c.json(
        await changeBudget(deps, refOf(c, sessionId), { ...c.req.valid("json"), resume: true }),
        202,
      );
    });
}
