/** `keel compare`'s rows (a fork counted from its own entries) and its side-by-side table. */
import { type ComparisonRow, comparisonRow, comparisonTable } from "../../../src/cli/commands/compare";

const usage = (input: number, output: number, total: number) => ({
  input,
  output,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: input + output,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total },
});
const assistant = (id: string, model: string, content: unknown[], cost: number) => ({
  id,
  type: "message",
  message: {
    role: "assistant",
    content,
    model,
    usage: usage(10, 5, cost),
    api: "x",
    provider: "y",
    stopReason: "stop",
    timestamp: 0,
  },
});
const user = (id: string, text: string) => ({
  id,
  type: "message",
  message: { role: "user", content: text, timestamp: 0 },
});

const entries = [
  user("u1", "go"),
  assistant("a1", "local-chat", [{ type: "toolCall", id: "c1", name: "write", arguments: {} }], 0.5),
  user("u2", "again"),
  assistant("a2", "local-responses", [{ type: "toolCall", id: "c2", name: "read", arguments: {} }], 0.001),
  assistant("a3", "local-responses", [{ type: "text", text: "The file\nsays: one" }], 0.002),
] as Parameters<typeof comparisonRow>[1];

test("a fork is counted from the entries it did not inherit", () => {
  const row = comparisonRow(
    { sessionId: "fork", status: "completed", parentSession: "origin" },
    entries,
    new Set(["u1", "a1"]),
    [{ path: "a.txt", change: "added" }],
  );
  expect(row).toEqual({
    sessionId: "fork",
    parentSession: "origin",
    forkedAt: "a1",
    status: "completed",
    models: ["local-responses"],
    turns: 2,
    toolCalls: { read: 1 },
    tokens: { input: 20, output: 10 },
    costUsd: 0.003,
    files: [{ path: "a.txt", change: "added" }],
    finalText: "The file says: one",
  });
  const whole = comparisonRow({ sessionId: "s", status: "idle" }, entries, new Set(), []);
  expect(whole).toMatchObject({
    turns: 3,
    toolCalls: { write: 1, read: 1 },
    models: ["local-chat", "local-responses"],
  });
  expect(whole.costUsd).toBeCloseTo(0.503);
  expect(comparisonRow({ sessionId: "e", status: "idle" }, [], new Set(), [])).toMatchObject({
    turns: 0,
    finalText: "",
  });
});

test("the table has one column per session and one line per measure", () => {
  const row = (sessionId: string, turns: number): ComparisonRow => ({
    sessionId,
    status: "completed",
    models: ["m"],
    turns,
    toolCalls: { read: turns },
    tokens: { input: 1, output: 2 },
    costUsd: 0.01,
    files: [],
    finalText: "x".repeat(100),
  });
  const table = comparisonTable([row("first", 2), row("second", 10)]);
  const lines = table.trimEnd().split("\n");
  expect(lines[0]).toMatch(/^session\s+first\s+second$/);
  expect(lines).toContain("turns          2                                                 10");
  expect(table).toMatch(/^tool calls\s+read×2\s+read×10$/m);
  expect(table).toMatch(/^cost\s+\$0\.0100\s+\$0\.0100$/m);
  expect(table).toMatch(/^files changed\s+-\s+-$/m);
  // Long cells are cut to the column's width with an ellipsis.
  expect(table).toMatch(/^final answer\s+x{47}…\s+x{47}…$/m);
});
