/**
 * What a Slack thread says about a paused run, and what a reply in it may ask (docs/integrations.md,
 * "Paused runs"). The grammar, a whole message, case-insensitive:
 * - `resume`: go on past the budget reached (`POST /v1/sessions/{id}/resume`);
 * - `budget <usd>` (e.g. `budget 2.50`, `budget $2.50`): the run's cost budget becomes that
 *   (`POST …/budget {maxCostUsd}`); a run paused at its cost budget goes on when it is above;
 * - `budget <n> tokens`: the run's token budget becomes that (`POST …/budget {maxTokens}`).
 * Anything else is a message to the run, as before.
 */
import type { BudgetRequest, PauseReason } from "../../contracts/pause";

/** The largest budgets a reply may set: the API's own bounds (schemas/budget.ts). */
const MAX_COST_USD = 1_000_000;
const MAX_TOKENS = 1_000_000_000_000;

const RESUME = /^resume$/i;
const COST = /^budget\s+\$?(\d{1,7}(?:\.\d{1,6})?)$/i;
const TOKENS = /^budget\s+(\d{1,13})\s+tokens?$/i;

/** The budget request a thread reply makes, or undefined when it is a message to the run. */
export function parseBudgetCommand(text: string): BudgetRequest | undefined {
  const trimmed = text.trim();
  if (RESUME.test(trimmed)) return { resume: true };
  const cost = COST.exec(trimmed);
  if (cost?.[1] !== undefined) {
    const maxCostUsd = Number(cost[1]);
    return maxCostUsd <= MAX_COST_USD ? { maxCostUsd } : undefined;
  }
  const tokens = TOKENS.exec(trimmed);
  if (tokens?.[1] !== undefined) {
    const maxTokens = Number(tokens[1]);
    return maxTokens <= MAX_TOKENS ? { maxTokens } : undefined;
  }
  return undefined;
}

/** The post announcing a pause: why, how to go on from the thread, and when it ends otherwise. */
export function pauseNoticeText(reason: PauseReason, message: string, until: number): string {
  const ends = `Without an answer the run ends at ${new Date(until).toISOString()}.`;
  if (reason.type === "tenantBudget")
    // The message says when it goes on; `resume` only asks again whether the tenant is under it.
    return `Paused: ${message}. Reply \`resume\` once the operator has raised it. ${ends}`;
  const raise =
    reason.budget === "cost"
      ? "`budget <usd>` (e.g. `budget 5`) to raise the cost budget"
      : "`budget <n> tokens` to raise the token budget";
  return `Paused: ${message}. Reply ${raise}, or \`resume\` to go on without it. ${ends}`;
}
