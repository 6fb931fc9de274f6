import type { AssistantMessage } from "../../../src/core/messages";
import { emptyUsage } from "../../../src/core/usage";
import { withUniqueToolCallIds } from "../../../src/providers/tool-call-ids";
import { markerKey } from "../../../src/store/tool-call-markers";

function assistant(ids: string[]): AssistantMessage {
  return {
    role: "assistant",
    content: [
      { type: "text", text: "calling" },
      ...ids.map((id) => ({ type: "toolCall" as const, id, name: "bash", arguments: { command: "true" } })),
    ],
    api: "openai-completions",
    provider: "test",
    model: "m",
    usage: emptyUsage(),
    stopReason: "toolUse",
    timestamp: 0,
  };
}

const idsOf = (message: AssistantMessage) =>
  message.content.flatMap((block) => (block.type === "toolCall" ? [block.id] : []));

describe("withUniqueToolCallIds", () => {
  it("returns the message unchanged when no id repeats", () => {
    const message = assistant(["call_a", "call_b"]);
    expect(withUniqueToolCallIds(message, new Set(["call_c"]), "slot")).toBe(message);
  });

  it("renames ids already used in the conversation and repeats within the message", () => {
    const renamed = withUniqueToolCallIds(
      assistant(["call_0", "call_0", "call_1"]),
      new Set(["call_0"]),
      "e1",
    );
    const ids = idsOf(renamed);
    expect(new Set([...ids, "call_0"]).size).toBe(4);
    expect(ids[0]).toMatch(/^call_0_k[0-9a-f]{8}$/);
    expect(ids[2]).toBe("call_1");
    // Deterministic: a retried turn with the same inputs gets the same ids.
    expect(
      idsOf(withUniqueToolCallIds(assistant(["call_0", "call_0", "call_1"]), new Set(["call_0"]), "e1")),
    ).toEqual(ids);
  });

  it("suffixes both parts of a Responses id", () => {
    const [id] = idsOf(withUniqueToolCallIds(assistant(["call_0|fc_0"]), new Set(["call_0|fc_0"]), "e2"));
    expect(id).toMatch(/^call_0_k([0-9a-f]{8})\|fc_0_k\1$/);
  });
});

describe("markerKey", () => {
  const ref = { tenantId: "t1", sessionId: "s1" };

  it("keys a tool call by its result slot, whatever the provider id", () => {
    const key = (toolCallId: string) =>
      markerKey("p/", ref, { kind: "toolCall", resultSlot: { seq: 42, id: "00ff00ff00ff00ff" }, toolCallId });
    expect(key("call_0|fc_1/../x")).toBe(
      "p/tenants/t1/sessions/s1/markers/tool-calls/000000000042-00ff00ff00ff00ff.json",
    );
    expect(key("other")).toBe(key("call_0|fc_1/../x"));
  });

  it("refuses slot ids that could escape the key", () => {
    expect(() =>
      markerKey("p/", ref, { kind: "toolCall", resultSlot: { seq: 1, id: "../x" }, toolCallId: "c" }),
    ).toThrow(/invalid entry id/);
  });
});
