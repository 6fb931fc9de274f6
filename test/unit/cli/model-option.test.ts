/** `--model`, repeatable (one model, or the list a failing turn goes down), and how a failover prints. */
import { parseArgs } from "node:util";
import { MESSAGE_OPTIONS, messageBody } from "../../../src/cli/commands/message";
import { formatEvent } from "../../../src/cli/render";

const API = "http://127.0.0.1:8787";
const bodyOf = (args: string[]) =>
  messageBody("go", "auto", parseArgs({ args, options: MESSAGE_OPTIONS, strict: true }).values, API);

test("one --model is a model; repeated, the models in the order given", () => {
  expect(bodyOf(["--model", "gpt-5"]).model).toBe("gpt-5");
  expect(bodyOf(["--model", "claude-sonnet-4-5", "-m", "gpt-5"]).model).toEqual([
    "claude-sonnet-4-5",
    "gpt-5",
  ]);
  expect(bodyOf([]).model).toBeUndefined();
});

test("a turn taken by another model shows in one line: from, to and why", () => {
  const line = formatEvent(
    {
      type: "model_fallback",
      seq: 9,
      from: "claude-sonnet-4-5",
      to: "gpt-5",
      reason: "overloaded",
      error: "claude-sonnet-4-5: 529 Overloaded",
    },
    { cost: 0, tokens: 0 },
  );
  expect(line).toBe("  ⇄ model claude-sonnet-4-5 → gpt-5 (overloaded: claude-sonnet-4-5: 529 Overloaded)");
  expect(line?.includes("\n")).toBe(false);
});
