/** Bodies and answers of the budget routes: raise (or lower) a run's budgets, resume a paused run. */

import { z } from "@hono/zod-openapi";
import { MAX_TOKEN_BUDGET } from "./message-body";
import { RunViewStatusSchema } from "./runs";

const budgetFields = {
  maxCostUsd: z
    .number()
    .min(0)
    .max(1_000_000)
    .optional()
    .openapi({ description: "The run's new cost budget in US dollars (0 = none); left out: unchanged" }),
  maxTokens: z
    .number()
    .int()
    .min(0)
    .max(MAX_TOKEN_BUDGET)
    .optional()
    .openapi({ description: "The run's new token budget (0 = none); left out: unchanged" }),
};

/** Neither field changes nothing: the answer is then the run's state and budgets as they are. */
export const BudgetBodySchema = z.object(budgetFields).openapi("BudgetRequest");

export const ResumeBodySchema = z.object(budgetFields).openapi("ResumeRequest");

const PauseReasonSchema = z
  .discriminatedUnion("type", [
    z.object({
      type: z.literal("runBudget"),
      budget: z.enum(["cost", "tokens"]),
      limit: z.number(),
      used: z.number(),
    }),
    z.object({ type: z.literal("tenantBudget"), budget: z.string(), message: z.string() }),
  ])
  .openapi("PauseReason", {
    description:
      "Why the run paused: its own budget (`runBudget`) or its tenant's token or cost quota (`tenantBudget`, `budget` names the quota)",
  });

export const RunPauseSchema = z
  .object({
    reason: PauseReasonSchema,
    message: z.string().openapi({ description: "Why, in one line" }),
    since: z.number().int().openapi({ description: "When it paused (epoch ms)" }),
    until: z.number().int().openapi({ description: "When the pause times out and the run ends (epoch ms)" }),
    rechecking: z.boolean().optional().openapi({
      description: "A resume asked whether the tenant is still over its budget; the answer is not in yet",
    }),
  })
  .openapi("RunPause");

export const RunBudgetSchema = z
  .object({ maxCostUsd: z.number(), maxTokens: z.number().int() })
  .openapi("RunBudget", { description: "The run's budgets (0 = none)" });

export const BudgetChangedSchema = z
  .object({
    accepted: z.literal(true),
    runId: z.string(),
    answered: z.boolean().openapi({
      description:
        "true: the run took the change and `status`/`budget` say where it stands. false: no worker answered within 2 s; the change is recorded and the run takes it when a worker picks it up",
    }),
    status: RunViewStatusSchema.optional(),
    budget: RunBudgetSchema.optional(),
    pause: RunPauseSchema.optional().openapi({ description: "Present while the run is still paused" }),
  })
  .openapi("BudgetChanged");
