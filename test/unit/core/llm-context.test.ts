import { llmMessagesFor } from "../../../src/core/llm-context";
import { checkInvariants } from "../../../src/core/sanitize";
import { parseSession } from "../../../src/core/session-codec";
import { PI_FIXTURES, readFixture, SESSION_FIXTURES } from "./helpers";

describe("llmMessagesFor", () => {
  it.each([
    [PI_FIXTURES, "before-compaction.jsonl"],
    [PI_FIXTURES, "large-session.jsonl"],
    [SESSION_FIXTURES, "branches-labels.jsonl"],
    [SESSION_FIXTURES, "split-turn.jsonl"],
  ])("%s/%s gives provider messages without invariant violations", (dir, name) => {
    const { entries } = parseSession(readFixture(dir, name));
    const result = llmMessagesFor(entries);
    expect(result.converged).toBe(true);
    expect(result.messages.length).toBeGreaterThan(0);
    expect(checkInvariants(result.messages)).toEqual([]);
    expect(
      result.messages.every((m) => m.role === "user" || m.role === "assistant" || m.role === "toolResult"),
    ).toBe(true);
  });

  it("prunes old tool output of a long real session and can be told not to", () => {
    const { entries } = parseSession(readFixture(PI_FIXTURES, "large-session.jsonl"));
    expect(llmMessagesFor(entries).prunedCount).toBeGreaterThan(0);
    expect(llmMessagesFor(entries, undefined, { prune: false }).prunedCount).toBe(0);
  });
});
