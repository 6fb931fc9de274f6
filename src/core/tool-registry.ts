/**
 * Tool-call registry: the lifecycle state of every tool call of a run, as plain data.
 *
 * pending → [awaiting_approval →] running → completed | failed | cancelled (pending and
 * awaiting_approval may also go straight to failed or cancelled: a call refused by policy or by
 * the user, or aborted before it started). Terminal states never change. The registry is a JSON-serialisable value (it is carried across
 * continue-as-new); every function returns a new registry and never mutates its input.
 */
import type { Message } from "./messages";

export type ToolCallState =
  | "pending"
  | "awaiting_approval"
  | "running"
  | "completed"
  | "failed"
  | "cancelled";

interface ToolCallRecord {
  toolCallId: string;
  toolName: string;
  state: ToolCallState;
  /** Why the call failed or was cancelled. */
  reason?: string;
}

export interface ToolCallRegistry {
  /** Records in registration order. */
  calls: ToolCallRecord[];
}

export type RegistryResult = { ok: true; registry: ToolCallRegistry } | { ok: false; error: string };

const ALLOWED_TRANSITIONS: Record<ToolCallState, readonly ToolCallState[]> = {
  pending: ["awaiting_approval", "running", "failed", "cancelled"],
  awaiting_approval: ["running", "failed", "cancelled"],
  running: ["completed", "failed", "cancelled"],
  completed: [],
  failed: [],
  cancelled: [],
};

export const TERMINAL_TOOL_CALL_STATES: readonly ToolCallState[] = ["completed", "failed", "cancelled"];

export function emptyToolCallRegistry(): ToolCallRegistry {
  return { calls: [] };
}

function isTransitionAllowed(from: ToolCallState, to: ToolCallState): boolean {
  return ALLOWED_TRANSITIONS[from].includes(to);
}

function findToolCall(registry: ToolCallRegistry, toolCallId: string): ToolCallRecord | undefined {
  return registry.calls.find((record) => record.toolCallId === toolCallId);
}

/**
 * Register a tool call as pending. Refused when the id is already registered, or when
 * `messages` is given and no assistant message in it holds a tool call with that id and name
 * (the registry may only name calls that exist in message parts).
 */
export function registerToolCall(
  registry: ToolCallRegistry,
  toolCallId: string,
  toolName: string,
  messages?: readonly Message[],
): RegistryResult {
  if (findToolCall(registry, toolCallId))
    return { ok: false, error: `tool call ${toolCallId} is already registered` };
  if (messages) {
    const call = toolCallPartsById(messages).get(toolCallId);
    if (!call) return { ok: false, error: `tool call ${toolCallId} is not in any assistant message` };
    if (call !== toolName) {
      return { ok: false, error: `tool call ${toolCallId} is named ${call} in the message, not ${toolName}` };
    }
  }
  return { ok: true, registry: { calls: [...registry.calls, { toolCallId, toolName, state: "pending" }] } };
}

/** Move a registered call to `to`; refused for unknown ids and illegal transitions. */
export function transitionToolCall(
  registry: ToolCallRegistry,
  toolCallId: string,
  to: ToolCallState,
  reason?: string,
): RegistryResult {
  const current = findToolCall(registry, toolCallId);
  if (!current) return { ok: false, error: `tool call ${toolCallId} is not registered` };
  if (!isTransitionAllowed(current.state, to)) {
    return { ok: false, error: `tool call ${toolCallId} cannot go from ${current.state} to ${to}` };
  }
  const next: ToolCallRecord = { toolCallId, toolName: current.toolName, state: to };
  if (reason !== undefined) next.reason = reason;
  return {
    ok: true,
    registry: { calls: registry.calls.map((record) => (record.toolCallId === toolCallId ? next : record)) },
  };
}

/** Tool name per tool-call id, read from assistant message parts (first occurrence wins). */
export function toolCallPartsById(messages: readonly Message[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    for (const block of message.content) {
      if (block.type === "toolCall" && !out.has(block.id)) out.set(block.id, block.name);
    }
  }
  return out;
}
