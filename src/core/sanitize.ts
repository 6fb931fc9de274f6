/**
 * History sanitation: the repairs a message list needs before it is sent to a model or stored
 * at the end of a run, and the invariant checker that says what is still wrong.
 *
 * Invariants (the message/tool-call contract, stated in docs/session-format.md): every tool call has exactly one result; results sit
 * in the run of tool results right after the assistant message that made the call; no two user
 * messages are adjacent; no system prompt in history; no empty assistant responses; the tool
 * registry and the message parts name the same tool-call ids.
 *
 * All functions are pure and return new arrays; input messages are never mutated.
 */
import { ABORTED_TOOL_RESULT_TEXT } from "./markers";
import type { AssistantMessage, Message, TextBlock, ToolResultMessage, UserMessage } from "./messages";
import { estimateTokens } from "./tokens";
import { TERMINAL_TOOL_CALL_STATES, type ToolCallRegistry, toolCallPartsById } from "./tool-registry";

/** Replacement text for a pruned tool output. */
export const PRUNED_TOOL_OUTPUT_MARKER = "[Old tool output cleared to save context]";
/** Most recent user turns whose tool outputs are never pruned. */
const PRUNE_PROTECTED_USER_TURNS = 2;
/** Tool-output tokens before the protected turns that are also kept (newest first). */
const PRUNE_PROTECT_TOKENS = 40_000;
/** Pruning only happens when it frees at least this many tokens (a cache miss costs too). */
const PRUNE_MINIMUM_TOKENS = 20_000;
/** Upper bound of cleanup passes; each pass only removes, so a few always suffice. */
const MAX_CLEANUP_ITERATIONS = 10;

/** What to do with a tool call that has no result. */
export type DanglingToolCallPolicy =
  /** Add an error result with `text` (default `[Aborted by user]`) right after the call. */
  | { kind: "synthesize"; text?: string }
  /** Remove the tool-call part (and the assistant message if nothing else remains). */
  | { kind: "remove" };

/** What to do with adjacent user messages. */
export type ConsecutiveUserPolicy = "merge" | "keepLast";

export interface CleanupOptions {
  dangling?: DanglingToolCallPolicy;
  consecutiveUsers?: ConsecutiveUserPolicy;
}

export interface CleanupResult {
  messages: Message[];
  /** Passes run, including the final one that changed nothing. */
  iterations: number;
  /** False when the iteration cap was hit before a pass changed nothing. */
  converged: boolean;
}

interface StepResult {
  messages: Message[];
  changed: boolean;
}

/** Ids of tool calls without a result anywhere in `messages`, in call order. */
export function findDanglingToolCalls(messages: readonly Message[]): string[] {
  const results = new Set<string>();
  for (const message of messages) if (message.role === "toolResult") results.add(message.toolCallId);
  return [...toolCallPartsById(messages).keys()].filter((id) => !results.has(id));
}

/**
 * Put every tool result right after the assistant message that made its call, in call order;
 * give dangling calls a synthetic error result or remove them (per `policy`); drop results
 * without a call, second results for the same call, and repeated tool-call ids.
 */
export function repairToolResults(
  messages: readonly Message[],
  policy: DanglingToolCallPolicy = { kind: "synthesize" },
): StepResult {
  const firstResult = new Map<string, ToolResultMessage>();
  for (const message of messages) {
    if (message.role === "toolResult" && !firstResult.has(message.toolCallId)) {
      firstResult.set(message.toolCallId, message);
    }
  }
  const seenCalls = new Set<string>();
  const out: Message[] = [];
  for (const message of messages) {
    if (message.role === "toolResult") continue;
    if (message.role !== "assistant") {
      out.push(message);
      continue;
    }
    const content = message.content.filter((block) => {
      if (block.type !== "toolCall") return true;
      if (seenCalls.has(block.id)) return false;
      seenCalls.add(block.id);
      return policy.kind === "synthesize" || firstResult.has(block.id);
    });
    if (content.length === 0 && message.content.length > 0) continue;
    const assistant = content.length === message.content.length ? message : { ...message, content };
    out.push(assistant);
    for (const block of assistant.content) {
      if (block.type !== "toolCall") continue;
      const result = firstResult.get(block.id);
      out.push(result ?? syntheticToolResult(assistant, block.id, block.name, policyText(policy)));
    }
  }
  return { messages: out, changed: !sameMessages(messages, out) };
}

/** Drop assistant messages that say nothing: no tool call and no non-blank text or thinking. */
export function dropEmptyAssistantMessages(messages: readonly Message[]): StepResult {
  const out = messages.filter((message) => message.role !== "assistant" || !isEmptyAssistant(message));
  return { messages: out, changed: out.length !== messages.length };
}

/** Resolve adjacent user messages: merge their content in order, or keep only the last one. */
export function resolveConsecutiveUserMessages(
  messages: readonly Message[],
  policy: ConsecutiveUserPolicy = "merge",
): StepResult {
  const out: Message[] = [];
  let changed = false;
  for (const message of messages) {
    const previous = out[out.length - 1];
    if (message.role === "user" && previous?.role === "user") {
      changed = true;
      out[out.length - 1] = policy === "merge" ? mergeUserMessages(previous, message) : message;
    } else {
      out.push(message);
    }
  }
  return { messages: out, changed };
}

/**
 * Run the repairs (tool results, empty responses, adjacent user messages) until a pass changes
 * nothing, at most `MAX_CLEANUP_ITERATIONS` passes. Repairs feed each other: removing a
 * dangling call can empty an assistant message, dropping it can make two user messages adjacent.
 */
export function runCleanupLoop(messages: readonly Message[], options: CleanupOptions = {}): CleanupResult {
  let current = [...messages];
  for (let iteration = 1; iteration <= MAX_CLEANUP_ITERATIONS; iteration++) {
    const repaired = repairToolResults(current, options.dangling);
    const nonEmpty = dropEmptyAssistantMessages(repaired.messages);
    const resolved = resolveConsecutiveUserMessages(nonEmpty.messages, options.consecutiveUsers);
    current = resolved.messages;
    if (!repaired.changed && !nonEmpty.changed && !resolved.changed) {
      return { messages: current, iterations: iteration, converged: true };
    }
  }
  return { messages: current, iterations: MAX_CLEANUP_ITERATIONS, converged: false };
}

export interface PruneOptions {
  protectedUserTurns?: number;
  protectTokens?: number;
  minimumTokens?: number;
}

export interface PruneResult {
  messages: Message[];
  /** Tool results whose content was replaced by the marker. */
  prunedCount: number;
  /** Estimated tokens freed. */
  prunedTokens: number;
  /** Index from which nothing was (or could have been) touched. */
  protectedFrom: number;
}

/**
 * Index where the protected recent window starts: the start of the last `protectedUserTurns`
 * user turns, extended backwards over tool outputs while their tokens fit `protectTokens`.
 * Returns 0 (everything protected) when there are fewer user turns than that.
 */
export function protectedWindowStart(messages: readonly Message[], options: PruneOptions = {}): number {
  const turns = options.protectedUserTurns ?? PRUNE_PROTECTED_USER_TURNS;
  const protectTokens = options.protectTokens ?? PRUNE_PROTECT_TOKENS;
  let start = messages.length;
  let userTurns = 0;
  while (start > 0 && userTurns < turns) {
    start--;
    if (messages[start]!.role === "user") userTurns++;
  }
  if (userTurns < turns) return 0;
  let kept = 0;
  for (let i = start - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== "toolResult" || isPruned(message)) continue;
    kept += estimateTokens(message);
    if (kept > protectTokens) break;
    start = i;
  }
  return start;
}

/**
 * Replace the content of old tool results (before the protected window) by
 * `PRUNED_TOOL_OUTPUT_MARKER`, but only when that frees at least `minimumTokens`; otherwise
 * return the messages unchanged. Call, id, name and error flag of a result are kept.
 */
export function pruneOldToolOutputs(messages: readonly Message[], options: PruneOptions = {}): PruneResult {
  const protectedFrom = protectedWindowStart(messages, options);
  const candidates: number[] = [];
  let prunedTokens = 0;
  for (let i = 0; i < protectedFrom; i++) {
    const message = messages[i]!;
    if (message.role !== "toolResult" || isPruned(message)) continue;
    candidates.push(i);
    prunedTokens += estimateTokens(message) - estimateTokens(prunedResult(message));
  }
  if (candidates.length === 0 || prunedTokens < (options.minimumTokens ?? PRUNE_MINIMUM_TOKENS)) {
    return { messages: [...messages], prunedCount: 0, prunedTokens: 0, protectedFrom };
  }
  const out = [...messages];
  for (const i of candidates) out[i] = prunedResult(out[i] as ToolResultMessage);
  return { messages: out, prunedCount: candidates.length, prunedTokens, protectedFrom };
}

/** One thing wrong with a message list; `index` points at the offending message. */
export type InvariantViolation =
  | { kind: "dangling_tool_call"; toolCallId: string; index: number }
  | { kind: "duplicate_tool_call_id"; toolCallId: string; index: number }
  | { kind: "duplicate_tool_result"; toolCallId: string; index: number }
  | { kind: "orphan_tool_result"; toolCallId: string; index: number }
  | { kind: "misplaced_tool_result"; toolCallId: string; index: number }
  | { kind: "adjacent_user_messages"; index: number }
  | { kind: "system_prompt"; index: number }
  | { kind: "empty_assistant"; index: number }
  | { kind: "registry_unknown_tool_call"; toolCallId: string }
  | { kind: "registry_missing_tool_call"; toolCallId: string }
  | { kind: "registry_state_mismatch"; toolCallId: string; state: string; hasResult: boolean };

/**
 * Every violation of the history invariants, in message order (registry checks last); an
 * empty list means the history may be sent or stored. With `registry`, its ids must equal the
 * tool-call ids in message parts, and a terminal state must match the presence of a result.
 * Accepts untrusted data: a message with a role other than user/assistant/toolResult
 * (e.g. `system`) is reported as `system_prompt`.
 */
export function checkInvariants(
  messages: readonly Message[],
  registry?: ToolCallRegistry,
): InvariantViolation[] {
  const violations: InvariantViolation[] = [];
  const calls = new Map<string, number>();
  const results = new Map<string, number>();
  let runOwner: AssistantMessage | undefined;
  messages.forEach((message, index) => {
    const role = (message as { role: string }).role;
    if (role !== "user" && role !== "assistant" && role !== "toolResult") {
      violations.push({ kind: "system_prompt", index });
      runOwner = undefined;
      return;
    }
    if (message.role === "user") {
      if (messages[index - 1]?.role === "user") violations.push({ kind: "adjacent_user_messages", index });
      runOwner = undefined;
    } else if (message.role === "assistant") {
      if (isEmptyAssistant(message)) violations.push({ kind: "empty_assistant", index });
      for (const block of message.content) {
        if (block.type !== "toolCall") continue;
        if (calls.has(block.id))
          violations.push({ kind: "duplicate_tool_call_id", toolCallId: block.id, index });
        else calls.set(block.id, index);
      }
      runOwner = message;
    } else {
      const toolCallId = message.toolCallId;
      if (results.has(toolCallId)) violations.push({ kind: "duplicate_tool_result", toolCallId, index });
      else results.set(toolCallId, index);
      const ownsCall = runOwner?.content.some(
        (block) => block.type === "toolCall" && block.id === toolCallId,
      );
      if (!ownsCall) {
        const callKnown = messages.some(
          (m) =>
            m.role === "assistant" && m.content.some((b) => b.type === "toolCall" && b.id === toolCallId),
        );
        violations.push({
          kind: callKnown ? "misplaced_tool_result" : "orphan_tool_result",
          toolCallId,
          index,
        });
      }
    }
  });
  for (const [toolCallId, index] of calls) {
    if (!results.has(toolCallId)) violations.push({ kind: "dangling_tool_call", toolCallId, index });
  }
  if (registry) violations.push(...checkRegistry(registry, calls, results));
  return violations;
}

function checkRegistry(
  registry: ToolCallRegistry,
  calls: ReadonlyMap<string, number>,
  results: ReadonlyMap<string, number>,
): InvariantViolation[] {
  const violations: InvariantViolation[] = [];
  const registered = new Set<string>();
  for (const record of registry.calls) {
    registered.add(record.toolCallId);
    if (!calls.has(record.toolCallId)) {
      violations.push({ kind: "registry_unknown_tool_call", toolCallId: record.toolCallId });
      continue;
    }
    const hasResult = results.has(record.toolCallId);
    if (TERMINAL_TOOL_CALL_STATES.includes(record.state) !== hasResult) {
      violations.push({
        kind: "registry_state_mismatch",
        toolCallId: record.toolCallId,
        state: record.state,
        hasResult,
      });
    }
  }
  for (const toolCallId of calls.keys()) {
    if (!registered.has(toolCallId)) violations.push({ kind: "registry_missing_tool_call", toolCallId });
  }
  return violations;
}

/** True when an assistant message has no tool call and no non-blank text or thinking. */
function isEmptyAssistant(message: AssistantMessage): boolean {
  return message.content.every(
    (block) =>
      (block.type === "text" && block.text.trim() === "") ||
      (block.type === "thinking" && block.thinking.trim() === ""),
  );
}

function syntheticToolResult(
  call: AssistantMessage,
  toolCallId: string,
  toolName: string,
  text: string,
): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId,
    toolName,
    content: [{ type: "text", text }],
    isError: true,
    timestamp: call.timestamp,
  };
}

function policyText(policy: DanglingToolCallPolicy): string {
  return policy.kind === "synthesize" ? (policy.text ?? ABORTED_TOOL_RESULT_TEXT) : ABORTED_TOOL_RESULT_TEXT;
}

function mergeUserMessages(first: UserMessage, second: UserMessage): UserMessage {
  return { ...first, content: [...asBlocks(first.content), ...asBlocks(second.content)] };
}

function asBlocks(content: UserMessage["content"]): Exclude<UserMessage["content"], string> {
  return typeof content === "string" ? [{ type: "text", text: content } satisfies TextBlock] : content;
}

function isPruned(message: ToolResultMessage): boolean {
  const only = message.content[0];
  return message.content.length === 1 && only?.type === "text" && only.text === PRUNED_TOOL_OUTPUT_MARKER;
}

function prunedResult(message: ToolResultMessage): ToolResultMessage {
  return { ...message, content: [{ type: "text", text: PRUNED_TOOL_OUTPUT_MARKER }] };
}

function sameMessages(a: readonly Message[], b: readonly Message[]): boolean {
  return a.length === b.length && a.every((message, i) => message === b[i]);
}
