import fc from "fast-check";
import { ABORTED_TOOL_RESULT_TEXT } from "../../../src/core/markers";
import type { Message } from "../../../src/core/messages";
import {
  checkInvariants,
  dropEmptyAssistantMessages,
  findDanglingToolCalls,
  PRUNED_TOOL_OUTPUT_MARKER,
  protectedWindowStart,
  pruneOldToolOutputs,
  repairToolResults,
  resolveConsecutiveUserMessages,
  runCleanupLoop,
} from "../../../src/core/sanitize";
import { emptyToolCallRegistry, registerToolCall, transitionToolCall } from "../../../src/core/tool-registry";
import { assistant, textOf, toolCall, toolResult, user } from "./helpers";

describe("tool results", () => {
  const history: Message[] = [user("go"), assistant([toolCall("a"), toolCall("b")]), toolResult("a")];

  it("finds dangling calls and gives them a synthetic error result right after the call", () => {
    expect(findDanglingToolCalls(history)).toEqual(["b"]);
    const { messages } = repairToolResults(history);
    expect(messages.map((m) => (m.role === "toolResult" ? `${m.toolCallId}:${textOf(m)}` : m.role))).toEqual([
      "user",
      "assistant",
      "a:ok",
      `b:${ABORTED_TOOL_RESULT_TEXT}`,
    ]);
    expect(messages[3]).toMatchObject({ isError: true, toolName: "read" });
    expect(repairToolResults(history, { kind: "synthesize", text: "[Timed out]" }).messages[3]).toMatchObject(
      {
        content: [{ type: "text", text: "[Timed out]" }],
      },
    );
  });

  it("removes dangling calls under the remove policy, and the message when nothing is left", () => {
    const { messages } = repairToolResults(history, { kind: "remove" });
    expect(messages[1]).toMatchObject({ content: [toolCall("a")] });
    const onlyDangling = repairToolResults([user("go"), assistant([toolCall("x")])], { kind: "remove" });
    expect(onlyDangling.messages).toEqual([user("go")]);
  });

  it("moves results behind their call and drops orphans and duplicates", () => {
    const messy: Message[] = [
      user("go"),
      assistant([toolCall("a")]),
      user("steer"),
      toolResult("a", "first"),
      toolResult("a", "second"),
      toolResult("zzz"),
    ];
    const { messages, changed } = repairToolResults(messy);
    expect(changed).toBe(true);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "user"]);
    expect(textOf(messages[2]!)).toBe("first");
    expect(repairToolResults(messages).changed).toBe(false);
  });
});

describe("empty responses and adjacent users", () => {
  it("drops assistant messages with nothing to say", () => {
    const messages = [
      user("a"),
      assistant([]),
      assistant([
        { type: "text", text: "  " },
        { type: "thinking", thinking: "" },
      ]),
      assistant([{ type: "text", text: "real" }]),
    ];
    expect(dropEmptyAssistantMessages(messages).messages).toEqual([user("a"), messages[3]]);
  });

  it("merges adjacent user messages in order, or keeps the last", () => {
    const merged = resolveConsecutiveUserMessages([
      user("one"),
      user("two"),
      assistant([{ type: "text", text: "x" }]),
    ]);
    expect(merged.messages[0]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "one" },
        { type: "text", text: "two" },
      ],
      timestamp: 1,
    });
    expect(resolveConsecutiveUserMessages([user("one"), user("two")], "keepLast").messages).toEqual([
      user("two"),
    ]);
  });
});

describe("runCleanupLoop", () => {
  it("reaches a fixed point where repairs feed each other", () => {
    // Removing the dangling call empties the assistant message; dropping it joins two users.
    const history: Message[] = [user("a"), assistant([toolCall("x")]), user("b")];
    const result = runCleanupLoop(history, { dangling: { kind: "remove" } });
    expect(result.converged).toBe(true);
    expect(result.messages).toHaveLength(1);
    expect(checkInvariants(result.messages)).toEqual([]);
    expect(result.iterations).toBeGreaterThan(1);
  });
});

describe("pruneOldToolOutputs", () => {
  const big = "x".repeat(40_000); // 10k tokens each
  const turn = (id: string): Message[] => [user(`do ${id}`), assistant([toolCall(id)]), toolResult(id, big)];
  const history = ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"].flatMap(turn);

  it("replaces old outputs by the marker and leaves the protected window alone", () => {
    const result = pruneOldToolOutputs(history);
    expect(result.prunedCount).toBeGreaterThan(0);
    expect(result.prunedTokens).toBeGreaterThanOrEqual(20_000);
    expect(result.messages.slice(result.protectedFrom)).toEqual(history.slice(result.protectedFrom));
    const pruned = result.messages.filter(
      (m) => m.role === "toolResult" && textOf(m) === PRUNED_TOOL_OUTPUT_MARKER,
    );
    expect(pruned).toHaveLength(result.prunedCount);
    // Last two turns plus 40k tokens of older output (4 results) stay; t1-t3 go.
    expect(result.prunedCount).toBe(3);
    expect(checkInvariants(result.messages)).toEqual([]);
  });

  it("does nothing when the saving is below the minimum", () => {
    expect(pruneOldToolOutputs(history, { minimumTokens: 1_000_000 }).prunedCount).toBe(0);
    expect(pruneOldToolOutputs(history.slice(0, 6)).messages).toEqual(history.slice(0, 6));
  });

  it("property: never touches the protected window", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 60_000 }), fc.boolean()), { maxLength: 30 }),
        fc.integer({ min: 0, max: 4 }),
        fc.integer({ min: 0, max: 50_000 }),
        (turns, protectedUserTurns, protectTokens) => {
          const messages = turns.flatMap(([size, withTool], i): Message[] =>
            withTool
              ? [user(`u${i}`), assistant([toolCall(`c${i}`)]), toolResult(`c${i}`, "y".repeat(size))]
              : [user(`u${i}`), assistant([{ type: "text", text: `${"z".repeat(size % 100)}.` }])],
          );
          const options = { protectedUserTurns, protectTokens, minimumTokens: 1 };
          const result = pruneOldToolOutputs(messages, options);
          expect(result.protectedFrom).toBe(protectedWindowStart(messages, options));
          expect(result.messages.slice(result.protectedFrom)).toEqual(messages.slice(result.protectedFrom));
          expect(result.messages.length).toBe(messages.length);
        },
      ),
    );
  });
});

describe("checkInvariants", () => {
  it("returns every violation, not only the first", () => {
    const messages = [
      { role: "system", content: "You are…", timestamp: 0 } as unknown as Message,
      user("a"),
      user("b"),
      assistant([toolCall("x"), toolCall("y")]),
      toolResult("x"),
      toolResult("x"),
      toolResult("nobody"),
      assistant([toolCall("y")]),
      assistant([]),
      user("late"),
      toolResult("y"),
    ];
    expect(checkInvariants(messages).map((v) => v.kind)).toEqual([
      "system_prompt",
      "adjacent_user_messages",
      "duplicate_tool_result",
      "orphan_tool_result",
      "duplicate_tool_call_id",
      "empty_assistant",
      "misplaced_tool_result",
    ]);
  });

  it("reports dangling calls and registry mismatches", () => {
    const messages: Message[] = [user("a"), assistant([toolCall("x"), toolCall("y")]), toolResult("x")];
    let registry = emptyToolCallRegistry();
    for (const id of ["x", "ghost"]) {
      const r = registerToolCall(registry, id, "read");
      if (r.ok) registry = r.registry;
    }
    const running = transitionToolCall(registry, "x", "running");
    if (!running.ok) throw new Error(running.error);
    expect(checkInvariants(messages, running.registry)).toEqual([
      { kind: "dangling_tool_call", toolCallId: "y", index: 1 },
      { kind: "registry_state_mismatch", toolCallId: "x", state: "running", hasResult: true },
      { kind: "registry_unknown_tool_call", toolCallId: "ghost" },
      { kind: "registry_missing_tool_call", toolCallId: "y" },
    ]);
  });
});

/** Arbitrary histories: any mix of user text, assistant text / tool calls and tool results. */
const messageArb: fc.Arbitrary<Message> = fc.oneof(
  fc.string({ maxLength: 5 }).map((text) => user(text)),
  fc
    .array(
      fc.oneof(
        fc.constantFrom("a", "b", "c", "d").map((id) => toolCall(id)),
        fc.string({ maxLength: 3 }).map((text) => ({ type: "text" as const, text })),
      ),
      { maxLength: 3 },
    )
    .map((content) => assistant(content)),
  fc.constantFrom("a", "b", "c", "d", "e").map((id) => toolResult(id)),
);

describe("sanitation properties", () => {
  it.each([{ kind: "synthesize" as const }, { kind: "remove" as const }])(
    "after cleanup (%o) every tool call has exactly one result and no invariant is violated",
    (dangling) => {
      fc.assert(
        fc.property(
          fc.array(messageArb, { maxLength: 25 }),
          fc.constantFrom("merge", "keepLast" as const),
          (history, users) => {
            const result = runCleanupLoop(history, {
              dangling,
              consecutiveUsers: users as "merge" | "keepLast",
            });
            expect(result.converged).toBe(true);
            expect(checkInvariants(result.messages)).toEqual([]);
            const calls = result.messages.flatMap((m) =>
              m.role === "assistant" ? m.content.filter((b) => b.type === "toolCall").map((b) => b.id) : [],
            );
            const results = result.messages.flatMap((m) => (m.role === "toolResult" ? [m.toolCallId] : []));
            expect([...results].sort()).toEqual([...calls].sort());
          },
        ),
        { numRuns: 300 },
      );
    },
  );
});
