/** A `task` call's result: the child's final answer in full up to the output limits, then a notice. */
import { finalAnswer, taskResultMessage } from "../../../src/activities/task-result";
import { createMessageEntry } from "../../../src/core/session-entries";
import type { SessionEntry } from "../../../src/core/session-types";
import { emptyUsage } from "../../../src/core/usage";
import { MAX_OUTPUT_LINES } from "../../../src/tools/truncate";

const outcome = {
  toolCallId: "call-1",
  toolName: "task",
  agent: "explore",
  child: { tenantId: "t", sessionId: "parent-task-abc" },
  status: "completed",
  reason: "the agent finished",
  usage: { ...emptyUsage(), input: 10, output: 5 },
  cutShort: false,
};

const textOf = (message: ReturnType<typeof taskResultMessage>): string =>
  message.content[0]?.type === "text" ? message.content[0].text : "";

test("an answer within the limits is returned whole, with usage and the child session", () => {
  const answer = "x".repeat(5_000);
  const message = taskResultMessage(outcome, answer, 1);
  expect(textOf(message)).toContain(answer);
  expect(textOf(message)).toContain("session parent-task-abc");
  expect(textOf(message)).toContain("10 input, 5 output tokens");
  expect(message.isError).toBe(false);
  expect(message.details).toEqual({
    agent: "explore",
    childSessionId: "parent-task-abc",
    status: "completed",
    usage: outcome.usage,
  });
});

test("a longer answer keeps its head and names the session that holds all of it", () => {
  const lines = Array.from({ length: MAX_OUTPUT_LINES + 500 }, (_, i) => `line ${i + 1}`);
  const message = taskResultMessage(outcome, lines.join("\n"), 1);
  const text = textOf(message);
  expect(text).toContain(`line ${MAX_OUTPUT_LINES}\n`);
  expect(text).not.toContain(`line ${MAX_OUTPUT_LINES + 1}\n`);
  expect(text).toContain(
    `[Showing lines 1-${MAX_OUTPUT_LINES} of ${MAX_OUTPUT_LINES + 500} of the agent's answer (50.0KB limit). Full answer: the last message of session parent-task-abc]`,
  );
  expect(message.details).toMatchObject({ truncation: { truncated: true, truncatedBy: "lines" } });
});

test("a child that did not complete is an error result with its reason", () => {
  const message = taskResultMessage({ ...outcome, status: "failed", reason: "max turns" }, "", 1);
  expect(message.isError).toBe(true);
  expect(textOf(message)).toContain("Agent explore failed: max turns");
});

test("a child stopped by a limit is an error result: the task is not done", () => {
  const message = taskResultMessage(
    { ...outcome, cutShort: true, reason: "turn limit reached (2)" },
    "half",
    1,
  );
  expect(message.isError).toBe(true);
  expect(textOf(message)).toContain("Agent explore stopped before finishing: turn limit reached (2)");
  expect(message.details).toMatchObject({ status: "completed", cutShort: true });
});

test("the final answer is the last assistant message with text, all its text blocks", () => {
  const at = (seq: number) => ({ id: `e${seq}`, parentId: null, timestamp: "2026-01-01T00:00:00.000Z" });
  const assistant = (seq: number, texts: string[]): SessionEntry =>
    createMessageEntry(at(seq), {
      role: "assistant",
      content: texts.map((text) => ({ type: "text" as const, text })),
      api: "x",
      provider: "x",
      model: "x",
      usage: emptyUsage(),
      stopReason: "stop",
      timestamp: 1,
    });
  const entries = [assistant(0, ["first"]), assistant(1, ["final", "part two"]), assistant(2, [])];
  expect(finalAnswer(entries)).toBe("final\npart two");
  expect(finalAnswer([])).toBe("");
});
