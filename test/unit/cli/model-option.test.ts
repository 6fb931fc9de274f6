/** `--model`, repeatable: one model as a string, several as the list a failing turn goes down. */
import { parseArgs } from "node:util";
import { MESSAGE_OPTIONS, messageBody } from "../../../src/cli/commands/message";

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
