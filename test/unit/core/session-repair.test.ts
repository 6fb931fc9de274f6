import { FAILED_MARKER, UNFINISHED_TOOL_RESULT_TEXT } from "../../../src/core/markers";
import type { AgentMessage } from "../../../src/core/messages";
import { convertToLlm } from "../../../src/core/messages";
import { checkInvariants } from "../../../src/core/sanitize";
import { createMessageEntry } from "../../../src/core/session-entries";
import { GAP_ENTRY_TYPE, planSessionRepair, type SeqEntry } from "../../../src/core/session-repair";
import { assistant, toolCall, toolResult, user } from "./helpers";

/** Entries chained seq by seq (id `e<seq>`), with `"gap"` where nothing was stored. */
function chain(messages: Array<AgentMessage | "gap">): SeqEntry[] {
  return messages.flatMap((message, seq) =>
    message === "gap"
      ? []
      : [
          {
            seq,
            entry: createMessageEntry(
              {
                id: `e${seq}`,
                parentId: seq === 0 ? null : `e${seq - 1}`,
                timestamp: "2026-01-01T00:00:00.000Z",
              },
              message,
            ),
          },
        ],
  );
}

let counter = 0;
const sources = { makeId: () => `new${counter++}`, now: 0 };

function repaired(stored: SeqEntry[]): SeqEntry[] {
  return [...stored, ...planSessionRepair(stored, sources)].sort((a, b) => a.seq - b.seq);
}

function messagesOf(entries: SeqEntry[]) {
  return entries.flatMap(({ entry }) => (entry.type === "message" ? [entry.message] : []));
}

test("a whole, closed session needs nothing", () => {
  const stored = chain([
    user("go"),
    assistant([toolCall("a")]),
    toolResult("a"),
    assistant([{ type: "text", text: "done" }]),
  ]);
  expect(planSessionRepair(stored, sources)).toEqual([]);
  expect(planSessionRepair([], sources)).toEqual([]);
});

test("a missing result of a parallel batch is filled at its slot with the id its successor names", () => {
  const stored = chain([user("go"), assistant([toolCall("a"), toolCall("b")]), "gap", toolResult("b")]);
  const writes = planSessionRepair(stored, sources);
  expect(writes).toHaveLength(1);
  expect(writes[0]).toMatchObject({
    seq: 2,
    entry: {
      id: "e2",
      parentId: "e1",
      message: {
        role: "toolResult",
        toolCallId: "a",
        isError: true,
        content: [{ text: UNFINISHED_TOOL_RESULT_TEXT }],
      },
    },
  });
  expect(checkInvariants(convertToLlm(messagesOf(repaired(stored))))).toEqual([]);
});

test("a gap no tool result belongs in is filled with a custom entry the model never sees", () => {
  const stored = chain([
    user("go"),
    assistant([{ type: "text", text: "hi" }]),
    "gap",
    user("again"),
    assistant([{ type: "text", text: "ok" }]),
  ]);
  const [write] = planSessionRepair(stored, sources);
  expect(write?.entry).toMatchObject({
    type: "custom",
    customType: GAP_ENTRY_TYPE,
    id: "e2",
    parentId: "e1",
  });
});

test("calls left without results at the end are answered, then the chain goes on from the leaf", () => {
  const stored = chain([
    user("go"),
    assistant([toolCall("a"), toolCall("b"), toolCall("c")]),
    toolResult("b"),
  ]);
  const writes = planSessionRepair(stored, sources);
  expect(writes.map((write) => write.seq)).toEqual([3, 4]);
  expect(
    writes.map((write) => (write.entry.type === "message" ? write.entry.message : undefined)),
  ).toMatchObject([
    { role: "toolResult", toolCallId: "a" },
    { role: "toolResult", toolCallId: "c" },
  ]);
  expect(writes[0]?.entry.parentId).toBe("e2");
  expect(writes[1]?.entry.parentId).toBe(writes[0]?.entry.id);
  expect(checkInvariants(convertToLlm(messagesOf(repaired(stored))))).toEqual([]);
});

test("an unanswered user message at the end gets an error answer", () => {
  const stored = chain([user("go"), assistant([{ type: "text", text: "hi" }]), user("and then?")]);
  const writes = planSessionRepair(stored, sources);
  expect(writes).toHaveLength(1);
  expect(writes[0]?.entry).toMatchObject({
    parentId: "e2",
    message: {
      role: "assistant",
      stopReason: "error",
      content: [{ text: expect.stringContaining(FAILED_MARKER) }],
    },
  });
});
