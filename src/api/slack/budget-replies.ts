/**
 * A thread reply that changes the thread's run's budget (`resume`, `budget <usd>`, `budget <n>
 * tokens`: integrations/slack/budget-commands.ts). It takes the API's own path
 * (`changeBudget`, as `POST /v1/sessions/{id}/resume` and `/budget`) under the thread's tenant,
 * and the answer is posted into the thread. Only people of a team mapped to the run's tenant may
 * spend its money: a reply whose author belongs to another team (a Slack Connect channel shared
 * with another organisation) is refused.
 */

import type { BudgetRequest, SessionRef } from "../../contracts/runs";
import type { SlackReply } from "../../integrations/slack/reply";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { changeBudget } from "../routes/budget";
import type { SlackThread } from "./threads";

export const FOREIGN_AUTHOR_TEXT =
  "Only members of this tenant's Slack workspaces can change this run's budget.";

/** What the thread is told after a change: where the run stands. */
function answerText(answer: Awaited<ReturnType<typeof changeBudget>>): string {
  if (!("status" in answer)) return "Recorded: the run takes the change when a worker picks it up.";
  if (answer.status === "paused")
    return `Still paused: ${answer.pause?.message ?? "a budget is still reached"}.`;
  const budget = answer.budget;
  const limits = budget
    ? ` (cost budget ${budget.maxCostUsd > 0 ? `$${budget.maxCostUsd}` : "none"}, token budget ${budget.maxTokens > 0 ? budget.maxTokens : "none"})`
    : "";
  return `The run goes on${limits}.`;
}

/**
 * Applies `request` to the run of the thread's session when every team the author belongs to
 * maps to `ref`'s tenant (`tenantOfTeam`), and posts the outcome (or the refusal) in the thread.
 */
export async function answerBudgetReply(
  deps: RouteContext,
  input: {
    ref: SessionRef;
    thread: SlackThread;
    request: BudgetRequest;
    /** The teams the reply's author belongs to, as the event names them. */
    authorTeams: readonly string[];
    tenantOfTeam: (teamId: string) => Promise<string | undefined>;
    reply: SlackReply;
  },
): Promise<void> {
  const { ref, thread, request } = input;
  const tenants = await Promise.all(input.authorTeams.map((teamId) => input.tenantOfTeam(teamId)));
  let text: string;
  if (tenants.some((tenantId) => tenantId !== ref.tenantId)) {
    deps.log({
      level: "warn",
      msg: "slack budget reply from another team refused",
      teamIds: input.authorTeams,
      sessionId: ref.sessionId,
    });
    text = FOREIGN_AUTHOR_TEXT;
  } else {
    try {
      text = answerText(await changeBudget(deps, ref, request));
    } catch (error) {
      if (!(error instanceof ProblemError)) throw error;
      text =
        error.slug === "no-active-run" || error.slug === "session-not-found"
          ? "There is no live run in this thread to change."
          : `Not changed: ${error.message}`;
    }
  }
  await input
    .reply({ channel: thread.channel, threadTs: thread.threadTs, text })
    .catch((failure) => deps.log({ level: "warn", msg: "slack reply failed", error: String(failure) }));
}
