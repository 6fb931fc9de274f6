import fc from "fast-check";
import { makeEntryId, seededRandom } from "../../../src/core/ids";
import type { Message } from "../../../src/core/messages";
import { parseSession, serializeSession } from "../../../src/core/session-codec";
import {
  createCustomEntry,
  createLabelEntry,
  createLeafMarker,
  createMessageEntry,
  createModelChangeEntry,
  createSessionHeader,
  createThinkingLevelChangeEntry,
} from "../../../src/core/session-entries";
import { buildContext, indexSession } from "../../../src/core/session-tree";
import type { SessionEntry } from "../../../src/core/session-types";
import { assistant, toolCall, toolResult, user } from "./helpers";

const messageArb: fc.Arbitrary<Message> = fc.oneof(
  fc.string().map((text) => user(text)),
  fc.string().map((text) => assistant([{ type: "text", text }, toolCall("c")])),
  fc.string().map((text) => toolResult("c", text)),
);
type Step =
  | { kind: "message"; message: Message }
  | { kind: "thinking"; level: string }
  | { kind: "label"; label: string }
  | { kind: "custom"; data: unknown };

/** Either a message or an entry that never contributes to context. */
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: messageArb.map((message) => ({ kind: "message" as const, message })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("off", "low", "high").map((level) => ({ kind: "thinking" as const, level })),
  },
  { weight: 1, arbitrary: fc.string().map((label) => ({ kind: "label" as const, label })) },
  {
    weight: 1,
    arbitrary: fc
      .jsonValue()
      .map((data) => ({ kind: "custom" as const, data: JSON.parse(JSON.stringify(data)) })),
  },
);

function linearSession(steps: Step[], seed: number) {
  const random = seededRandom(seed);
  const entries: SessionEntry[] = [];
  const at = () => ({
    id: makeEntryId(random),
    parentId: entries[entries.length - 1]?.id ?? null,
    timestamp: "2026-01-01T00:00:00.000Z",
  });
  const messages: Message[] = [];
  for (const step of steps) {
    if (step.kind === "message") {
      entries.push(createMessageEntry(at(), step.message));
      messages.push(step.message);
    } else if (step.kind === "thinking") entries.push(createThinkingLevelChangeEntry(at(), step.level));
    else if (step.kind === "label")
      entries.push(createLabelEntry(at(), entries[0]?.id ?? "none", step.label || undefined));
    else entries.push(createCustomEntry(at(), "x", step.data));
  }
  return { entries, messages };
}

describe("session properties", () => {
  it("context of a branch-free tree equals the linear history", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 30 }), fc.integer(), (steps, seed) => {
        const { entries, messages } = linearSession(steps, seed);
        expect(buildContext(entries).messages).toEqual(messages);
      }),
    );
  });

  it("JSONL export → import → export is identical, and the tree survives", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 30 }), fc.integer(), (steps, seed) => {
        const { entries } = linearSession(steps, seed);
        const first = serializeSession({
          header: createSessionHeader("s", "2026-01-01T00:00:00.000Z", "/"),
          entries,
        });
        const parsed = parseSession(first);
        expect(parsed.errors).toEqual([]);
        expect(serializeSession({ header: parsed.header!, entries: parsed.entries })).toBe(first);
        expect(indexSession(parsed.entries).leafId).toBe(indexSession(entries).leafId);
      }),
    );
  });

  it("a leaf marker moves the leaf without adding context", () => {
    const random = seededRandom(9);
    const entries: SessionEntry[] = [];
    const at = (parentId: string | null) => ({
      id: makeEntryId(random),
      parentId,
      timestamp: "2026-01-01T00:00:00.000Z",
    });
    entries.push(createModelChangeEntry(at(null), "anthropic", "m"));
    entries.push(createMessageEntry(at(entries[0]!.id), user("one")));
    entries.push(createMessageEntry(at(entries[1]!.id), assistant([{ type: "text", text: "two" }])));
    const before = buildContext(entries, entries[1]!.id);
    entries.push(createLeafMarker({ ...at(null), parentId: entries[1]!.id }));
    expect(indexSession(entries).leafId).toBe(entries[3]!.id);
    expect(buildContext(entries)).toEqual(before);
  });
});
