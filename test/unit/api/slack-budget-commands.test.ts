/** The thread replies that change a paused run's budget, and the notice that names them. */
import { parseBudgetCommand, pauseNoticeText } from "../../../src/integrations/slack/budget-commands";

describe("budget replies in a Slack thread", () => {
  test("resume and budget <usd> / <n> tokens, whole message, any case", () => {
    expect(parseBudgetCommand("resume")).toEqual({ resume: true });
    expect(parseBudgetCommand("  RESUME ")).toEqual({ resume: true });
    expect(parseBudgetCommand("budget 5")).toEqual({ maxCostUsd: 5 });
    expect(parseBudgetCommand("Budget $2.50")).toEqual({ maxCostUsd: 2.5 });
    expect(parseBudgetCommand("budget 0")).toEqual({ maxCostUsd: 0 });
    expect(parseBudgetCommand("budget 20000 tokens")).toEqual({ maxTokens: 20_000 });
    expect(parseBudgetCommand("budget 1 token")).toEqual({ maxTokens: 1 });
  });

  test("anything else is a message to the run", () => {
    for (const text of [
      "please resume the refactor",
      "resume!",
      "budget",
      "budget is tight, be careful",
      "budget -1",
      "budget 1e9",
      "budget 5 dollars",
      "budget 2000000",
      "budget 0x10",
    ])
      expect(parseBudgetCommand(text)).toBeUndefined();
  });

  test("the notice names the budget and the reply that raises it", () => {
    const until = Date.UTC(2026, 0, 2);
    expect(
      pauseNoticeText(
        { type: "runBudget", budget: "tokens", limit: 100, used: 120 },
        "token budget reached (100; used 120)",
        until,
      ),
    ).toBe(
      "Paused: token budget reached (100; used 120). Reply `budget <n> tokens` to raise the token budget, or `resume` to go on without it. Without an answer the run ends at 2026-01-02T00:00:00.000Z.",
    );
    expect(pauseNoticeText({ type: "tenantBudget", budget: "day", message: "m" }, "m", until)).toMatch(
      /^Paused: m\. Reply `resume` once the operator has raised it\./,
    );
  });
});
