import {
  emptyToolCallRegistry,
  registerToolCall,
  type ToolCallRegistry,
  type ToolCallState,
  transitionToolCall,
} from "../../../src/core/tool-registry";
import { assistant, toolCall, user } from "./helpers";

function unwrap(result: ReturnType<typeof registerToolCall>): ToolCallRegistry {
  if (!result.ok) throw new Error(result.error);
  return result.registry;
}

describe("tool-call registry", () => {
  const messages = [user("go"), assistant([toolCall("c1", "read"), toolCall("c2", "bash")])];

  it("walks pending → running → completed and stays JSON-serialisable", () => {
    let registry = unwrap(registerToolCall(emptyToolCallRegistry(), "c1", "read", messages));
    registry = unwrap(transitionToolCall(registry, "c1", "running"));
    registry = unwrap(transitionToolCall(registry, "c1", "completed"));
    expect(JSON.parse(JSON.stringify(registry))).toEqual({
      calls: [{ toolCallId: "c1", toolName: "read", state: "completed" }],
    });
  });

  it("rejects illegal transitions and leaves the input untouched", () => {
    const all: ToolCallState[] = [
      "pending",
      "awaiting_approval",
      "running",
      "completed",
      "failed",
      "cancelled",
    ];
    const legal = new Set([
      "pending>awaiting_approval",
      "pending>running",
      "awaiting_approval>running",
      "awaiting_approval>failed",
      "awaiting_approval>cancelled",
      "pending>failed",
      "pending>cancelled",
      "running>completed",
      "running>failed",
      "running>cancelled",
    ]);
    const reach: Record<ToolCallState, ToolCallState[]> = {
      pending: [],
      awaiting_approval: ["awaiting_approval"],
      running: ["running"],
      completed: ["running", "completed"],
      failed: ["failed"],
      cancelled: ["cancelled"],
    };
    for (const from of all) {
      let registry = unwrap(registerToolCall(emptyToolCallRegistry(), "c1", "read"));
      for (const step of reach[from]) registry = unwrap(transitionToolCall(registry, "c1", step));
      const before = JSON.stringify(registry);
      for (const to of all) {
        const result = transitionToolCall(registry, "c1", to);
        expect(result.ok).toBe(legal.has(`${from}>${to}`));
        if (!result.ok) expect(result.error).toContain(`from ${from} to ${to}`);
      }
      expect(JSON.stringify(registry)).toBe(before);
    }
  });

  it("checks ids and names against message parts, and refuses duplicates and unknown ids", () => {
    expect(registerToolCall(emptyToolCallRegistry(), "nope", "read", messages)).toEqual({
      ok: false,
      error: "tool call nope is not in any assistant message",
    });
    expect(registerToolCall(emptyToolCallRegistry(), "c2", "read", messages).ok).toBe(false);
    const registry = unwrap(registerToolCall(emptyToolCallRegistry(), "c2", "bash", messages));
    expect(registerToolCall(registry, "c2", "bash").ok).toBe(false);
    expect(transitionToolCall(registry, "c9", "running").ok).toBe(false);
  });
});
