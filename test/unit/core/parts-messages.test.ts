import fc from "fast-check";
import { seededRandom } from "../../../src/core/ids";
import type { Message } from "../../../src/core/messages";
import { canonicalToParts, partsToCanonical, stripSystemPromptParts } from "../../../src/core/parts-messages";
import { exportPartsSession, importPartsSession } from "../../../src/core/parts-session";
import { parseSession, serializeSession } from "../../../src/core/session-codec";
import { buildContext } from "../../../src/core/session-tree";
import { assistant, readFixture, SESSION_FIXTURES, toolCall, toolResult, user } from "./helpers";

const options = { fallbackTimestamp: 1_000 };
const wireSession = JSON.parse(readFixture(SESSION_FIXTURES, "wire-session.json"));

describe("partsToCanonical", () => {
  it("converts requests, responses and legacy dicts in part order, ids kept, system prompt stripped", () => {
    const { messages, systemPrompts, problems } = partsToCanonical(wireSession.messages, {
      ...options,
      fallbackProvider: "anthropic",
    });
    expect(problems).toEqual([]);
    expect(systemPrompts).toEqual(["You are a coding agent."]);
    expect(messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "assistant",
    ]);
    const response = messages[3]!;
    expect(response.role === "assistant" && response.content).toEqual([
      { type: "thinking", thinking: "Use bash." },
      { type: "text", text: "Running them." },
      { type: "toolCall", id: "tc_1", name: "bash", arguments: { command: "npm test" } },
      { type: "toolCall", id: "tc_2", name: "read", arguments: { path: "package.json" } },
    ]);
    expect(response).toMatchObject({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      stopReason: "toolUse",
    });
    expect(response.role === "assistant" && response.usage).toMatchObject({
      input: 1200,
      output: 80,
      totalTokens: 1280,
    });
    expect(messages[4]).toMatchObject({
      toolCallId: "tc_1",
      isError: false,
      content: [{ text: "2 failing" }],
    });
    expect(messages[5]).toMatchObject({ toolCallId: "tc_2", isError: true, toolName: "read" });
    expect(messages[1]).toMatchObject({
      role: "assistant",
      content: [{ type: "thinking", thinking: "Legacy thought" }],
    });
  });

  it("reports what it cannot read and keeps going", () => {
    const result = partsToCanonical(
      [
        42,
        { kind: "request", parts: [{ part_kind: "mystery" }] },
        { kind: "response", parts: [{ part_kind: "tool-call" }] },
      ],
      options,
    );
    expect(result.problems).toHaveLength(3);
    expect(result.messages).toHaveLength(1); // the response, without the broken part
  });

  it("strips system-prompt parts from wire messages", () => {
    const stripped = stripSystemPromptParts(wireSession.messages.slice(2, 3));
    expect(stripped[0]!.parts.map((p) => p.part_kind)).toEqual(["user-prompt"]);
    expect(
      stripSystemPromptParts([{ kind: "request", parts: [{ part_kind: "system-prompt", content: "x" }] }]),
    ).toEqual([]);
  });
});

const blockArb = fc.oneof(
  fc.string().map((text) => ({ type: "text" as const, text })),
  fc.string().map((thinking) => ({ type: "thinking" as const, thinking })),
  fc
    .tuple(
      fc.string({ minLength: 1 }),
      fc.string({ minLength: 1 }),
      // Normalised through JSON: stored arguments are JSON, where -0 reads back as 0.
      fc.dictionary(
        fc.string(),
        fc.jsonValue().map((value) => JSON.parse(JSON.stringify(value))),
      ),
    )
    .map(([id, name, args]) => toolCall(id, name, args)),
);
const messageArb: fc.Arbitrary<Message> = fc.oneof(
  fc.tuple(fc.string(), fc.integer({ min: 0, max: 4e12 })).map(([text, t]) => user(text, t)),
  fc
    .tuple(
      fc.array(blockArb, { maxLength: 4 }),
      fc.integer({ min: 0, max: 4e12 }),
      fc.constantFrom("stop", "toolUse", "error", "length", "aborted" as const),
    )
    .map(([content, timestamp, stopReason]) => assistant(content, { timestamp, stopReason })),
  fc
    .tuple(fc.string({ minLength: 1 }), fc.string(), fc.boolean(), fc.integer({ min: 0, max: 4e12 }))
    .map(([id, text, isError, timestamp]) => ({ ...toolResult(id, text), isError, timestamp })),
);

describe("round trips", () => {
  it("property: canonical → wire → canonical is the identity for canonical text, thinking, calls and results", () => {
    fc.assert(
      fc.property(fc.array(messageArb, { maxLength: 12 }), (messages) => {
        const wire = canonicalToParts(messages);
        const back = partsToCanonical(JSON.parse(JSON.stringify(wire)), options);
        expect(back.problems).toEqual([]);
        expect(back.messages).toEqual(messages);
      }),
    );
  });

  it("property: export → import → export is identical", () => {
    fc.assert(
      fc.property(fc.array(messageArb, { maxLength: 12 }), fc.integer(), (messages, seed) => {
        const session = {
          version: 1,
          session_id: "s",
          current_model: "openai:gpt-5",
          messages: canonicalToParts(messages),
        };
        const first = importPartsSession(
          JSON.parse(JSON.stringify(session)),
          seededRandom(seed),
          "2026-01-01T00:00:00.000Z",
        );
        const exported = JSON.parse(JSON.stringify(exportPartsSession(first.session)));
        const second = importPartsSession(exported, seededRandom(seed + 1), "2026-01-01T00:00:00.000Z");
        expect(JSON.parse(JSON.stringify(exportPartsSession(second.session)))).toEqual(exported);
      }),
    );
  });
});

describe("importPartsSession", () => {
  it("builds a linear tree that keeps metadata, tool-call ids and part order", () => {
    const { session, problems } = importPartsSession(
      wireSession,
      seededRandom(3),
      "2026-02-01T00:00:00.000Z",
    );
    expect(problems).toEqual([]);
    expect(session.header).toMatchObject({
      id: "sess-7f3a",
      cwd: "/home/dev/demo",
      timestamp: "2026-01-04T09:00:00+00:00",
    });
    // Keel's own serializer and parser accept it without a complaint.
    const reparsed = parseSession(serializeSession(session));
    expect(reparsed.errors).toEqual([]);
    const context = buildContext(reparsed.entries);
    expect(context.model).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
    expect(context.messages).toHaveLength(7);
    const exported = exportPartsSession(session);
    expect(exported).toMatchObject({
      version: 1,
      project_id: "proj-demo",
      total_tokens: 5120,
      thoughts: ["check the tests first"],
      session_total_usage: wireSession.session_total_usage,
    });
    const calls = exported.messages.flatMap((m) =>
      m.parts.filter((p) => p.part_kind === "tool-call").map((p) => p.tool_call_id),
    );
    expect(calls).toEqual(["tc_1", "tc_2"]);
    const returns = exported.messages.flatMap((m) =>
      m.parts.filter((p) => "tool_call_id" in p && p.part_kind !== "tool-call"),
    );
    expect(returns.map((p) => [p.part_kind, p.tool_call_id])).toEqual([
      ["tool-return", "tc_1"],
      ["retry-prompt", "tc_2"],
    ]);
    expect(JSON.stringify(exported)).not.toContain("system-prompt");
  });

  it("never throws on junk", () => {
    for (const junk of [null, 42, "x", [], { messages: "nope" }]) {
      const result = importPartsSession(junk, seededRandom(1), "2026-02-01T00:00:00.000Z");
      expect(result.problems.length).toBeGreaterThan(0);
      expect(result.session.entries.length).toBeGreaterThan(0);
    }
  });
});
