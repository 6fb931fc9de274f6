/** `keel budget` and `keel resume`: a live run's budgets, and a run paused at one. */
import { EXIT, UsageError } from "../../api-client/client";
import { type Command, integerOption, parseCommand, printJson } from "../command";
import { costOption } from "./message";

const OPTIONS = { "max-cost": { type: "string" }, "max-tokens": { type: "string" } } as const;

/** The budgets named on the command line (`--max-cost`, `--max-tokens`). */
function budgetsFrom(values: Record<string, unknown>): { maxCostUsd?: number; maxTokens?: number } {
  const maxCostUsd = costOption(values["max-cost"] as string | undefined);
  const maxTokens = integerOption(values["max-tokens"] as string | undefined, "max-tokens");
  return {
    ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
  };
}

/** What both commands print: where the run stands after the change. */
function report(
  sessionId: string,
  answer: {
    answered: boolean;
    status?: string;
    budget?: { maxCostUsd: number; maxTokens: number };
    pause?: { message: string };
  },
): string {
  if (!answer.answered)
    return `budget change recorded for session ${sessionId}; the run takes it when a worker picks it up\n`;
  const budget = answer.budget
    ? ` · budget $${answer.budget.maxCostUsd || "∞"}, ${answer.budget.maxTokens || "∞"} tokens`
    : "";
  const still = answer.pause ? ` (still paused: ${answer.pause.message})` : "";
  return `session ${sessionId}: ${answer.status ?? "unknown"}${budget}${still}\n`;
}

export const budgetCommand: Command = {
  usage: "keel budget <session> [--max-cost USD] [--max-tokens N]",
  summary: "change the live run's budgets (0 = none); a run paused at a budget it lifts goes on",
  async run(argv, context) {
    const parsed = parseCommand(argv, OPTIONS, { min: 1, max: 1, names: "<session>" }, context);
    const [sessionId] = parsed.positionals as [string];
    const json = budgetsFrom(parsed.values);
    if (Object.keys(json).length === 0) throw new UsageError("give --max-cost, --max-tokens or both");
    const { client } = parsed;
    const answer = await client.json(
      client.api.v1.sessions[":sessionId"].budget.$post({ param: { sessionId }, json }),
    );
    if (parsed.json) printJson(context, answer);
    else context.out.write(report(sessionId, answer));
    return EXIT.ok;
  },
};

export const resumeCommand: Command = {
  usage: "keel resume <session> [--max-cost USD] [--max-tokens N]",
  summary: "resume a run paused at its budget (with new budgets; a budget still reached is removed)",
  async run(argv, context) {
    const parsed = parseCommand(argv, OPTIONS, { min: 1, max: 1, names: "<session>" }, context);
    const [sessionId] = parsed.positionals as [string];
    const { client } = parsed;
    const answer = await client.json(
      client.api.v1.sessions[":sessionId"].resume.$post({
        param: { sessionId },
        json: budgetsFrom(parsed.values),
      }),
    );
    if (parsed.json) printJson(context, answer);
    else context.out.write(report(sessionId, answer));
    return EXIT.ok;
  },
};
