import { coalesce } from "../../../src/activities/live-events";
import type { LiveEvent } from "../../../src/core/events";

const text = (delta: string, contentIndex = 0, entryId = "e1", attempt = 1): LiveEvent => ({
  type: "message_update",
  entryId,
  attempt,
  assistantMessageEvent: { type: "text_delta", contentIndex, delta },
});

test("consecutive deltas of one block merge; another block, message or attempt starts a new event", () => {
  const waiting: LiveEvent[] = [];
  coalesce(waiting, text("Hel"));
  coalesce(waiting, text("lo"));
  coalesce(waiting, text("x", 1));
  coalesce(waiting, text("y", 1, "e2"));
  coalesce(waiting, text("z", 1, "e2", 2));
  expect(waiting.map((event) => event.type === "message_update" && event.assistantMessageEvent)).toEqual([
    { type: "text_delta", contentIndex: 0, delta: "Hello" },
    { type: "text_delta", contentIndex: 1, delta: "x" },
    { type: "text_delta", contentIndex: 1, delta: "y" },
    { type: "text_delta", contentIndex: 1, delta: "z" },
  ]);
});

test("a reset is never merged into, and text after it starts afresh", () => {
  const waiting: LiveEvent[] = [text("old")];
  coalesce(waiting, {
    type: "message_update",
    entryId: "e1",
    attempt: 1,
    assistantMessageEvent: { type: "reset" },
  });
  coalesce(waiting, text("new"));
  expect(waiting).toHaveLength(3);
  expect(waiting[2]).toEqual(text("new"));
});

test("a newer tool output replaces the waiting one: each carries the whole output so far", () => {
  const update = (partial: string): LiveEvent => ({
    type: "tool_execution_update",
    toolCallId: "c1",
    toolName: "bash",
    attempt: 1,
    partial,
  });
  const waiting: LiveEvent[] = [];
  coalesce(waiting, update("a"));
  coalesce(waiting, update("a\nb"));
  expect(waiting).toEqual([update("a\nb")]);
});
