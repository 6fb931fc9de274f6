/**
 * Parts messages, the message format of the message/tool-call contract's session files
 * (`{kind: "request" | "response", parts: [{part_kind, …}]}`, as tunacode stores pydantic-ai
 * messages) and the legacy `{content}` / `{thought}` dicts, to and from canonical messages. ("Wire"
 * elsewhere in Keel means an LLM provider's HTTP format; this is not one.) Parts stay the single source of truth:
 * tool calls come only from `tool-call` parts, ids and part order are kept.
 *
 * Mapping (parts → canonical):
 * - request `user-prompt` → one user message per part (string or text/image list);
 * - request `tool-return` → toolResult (non-string content as JSON text);
 * - request `retry-prompt` with a tool call id → toolResult with `isError`; without → user text;
 * - request `system-prompt` → not a message: collected apart (never persisted in history);
 * - response → one assistant message: `text`, `thinking` / `thought`, `tool-call` parts in order;
 * - legacy `{content}` → user text (assistant text when `role: "assistant"`); `{thought}` →
 *   assistant thinking.
 * Canonical → parts: consecutive user / toolResult messages share one request (as pydantic-ai
 * sends them); an assistant message is one response. Error results become `retry-prompt` parts.
 */
import {
  type AssistantMessage,
  CostSchema,
  type Message,
  type StopReason,
  type UserMessage,
} from "./messages";
import { emptyUsage } from "./usage";

type MessagePart = Record<string, unknown> & { part_kind: string };
export interface PartsMessage {
  kind: "request" | "response";
  parts: MessagePart[];
  [key: string]: unknown;
}

export interface ToCanonicalResult {
  messages: Message[];
  /** Text of stripped system-prompt parts, in order. */
  systemPrompts: string[];
  /** Parts or messages that could not be read, with their position. */
  problems: string[];
}

/** Values used where parts messages lack what canonical messages require. */
export interface ToCanonicalOptions {
  /** Epoch ms for parts and messages without a timestamp. */
  fallbackTimestamp: number;
  /** Provider / model for responses without them (e.g. the session's current model). */
  fallbackProvider?: string;
  fallbackModel?: string;
}

/** `api` recorded for assistant messages that came from parts messages without one. */
const PARTS_MESSAGES_API = "pydantic-ai";
const UNKNOWN = "unknown";

const STOP_TO_FINISH: Record<StopReason, string> = {
  stop: "stop",
  length: "length",
  toolUse: "tool_call",
  error: "error",
  aborted: "aborted",
};
const FINISH_TO_STOP: Record<string, StopReason> = Object.fromEntries(
  Object.entries(STOP_TO_FINISH).map(([stop, finish]) => [finish, stop as StopReason]),
);

/** Canonical messages from parts messages / legacy dicts. Never throws; bad items go to `problems`. */
export function partsToCanonical(items: readonly unknown[], options: ToCanonicalOptions): ToCanonicalResult {
  const result: ToCanonicalResult = { messages: [], systemPrompts: [], problems: [] };
  items.forEach((item, index) => {
    if (!isRecord(item)) {
      result.problems.push(`message ${index}: not an object`);
      return;
    }
    if (item.kind === "request" && Array.isArray(item.parts)) readRequest(item.parts, index, options, result);
    else if (item.kind === "response" && Array.isArray(item.parts))
      readResponse(item, index, options, result);
    else if (typeof item.thought === "string")
      result.messages.push(legacyAssistant([{ type: "thinking", thinking: item.thought }], options));
    else if (typeof item.content === "string") {
      result.messages.push(
        item.role === "assistant"
          ? legacyAssistant([{ type: "text", text: item.content }], options)
          : { role: "user", content: item.content, timestamp: options.fallbackTimestamp },
      );
    } else result.problems.push(`message ${index}: neither a request, a response nor a legacy dict`);
  });
  return result;
}

function readRequest(
  parts: unknown[],
  index: number,
  options: ToCanonicalOptions,
  out: ToCanonicalResult,
): void {
  parts.forEach((part, p) => {
    const where = `message ${index} part ${p}`;
    if (!isRecord(part)) {
      out.problems.push(`${where}: not an object`);
      return;
    }
    const timestamp = epochMs(part.timestamp, options.fallbackTimestamp);
    switch (part.part_kind) {
      case "system-prompt":
        out.systemPrompts.push(String(part.content ?? ""));
        return;
      case "user-prompt": {
        const content = userContent(part.content);
        if (content === undefined) out.problems.push(`${where}: unreadable user-prompt content`);
        else out.messages.push({ role: "user", content, timestamp });
        return;
      }
      case "tool-return":
      case "retry-prompt": {
        const toolCallId = typeof part.tool_call_id === "string" ? part.tool_call_id : "";
        const text = typeof part.content === "string" ? part.content : JSON.stringify(part.content ?? null);
        if (part.part_kind === "retry-prompt" && (!toolCallId || typeof part.tool_name !== "string")) {
          out.messages.push({ role: "user", content: text, timestamp });
          return;
        }
        if (!toolCallId) {
          out.problems.push(`${where}: tool-return without tool_call_id`);
          return;
        }
        out.messages.push({
          role: "toolResult",
          toolCallId,
          toolName: typeof part.tool_name === "string" ? part.tool_name : UNKNOWN,
          content: [{ type: "text", text }],
          isError: part.part_kind === "retry-prompt",
          timestamp,
        });
        return;
      }
      default:
        out.problems.push(`${where}: unknown request part_kind ${JSON.stringify(part.part_kind)}`);
    }
  });
}

function readResponse(
  message: Record<string, unknown>,
  index: number,
  options: ToCanonicalOptions,
  out: ToCanonicalResult,
): void {
  const content: AssistantMessage["content"] = [];
  (message.parts as unknown[]).forEach((part, p) => {
    const where = `message ${index} part ${p}`;
    if (!isRecord(part)) {
      out.problems.push(`${where}: not an object`);
      return;
    }
    switch (part.part_kind) {
      case "text": {
        const block: AssistantMessage["content"][number] = { type: "text", text: String(part.content ?? "") };
        if (typeof part.id === "string") block.textSignature = part.id;
        content.push(block);
        return;
      }
      case "thinking":
      case "thought": {
        const block: AssistantMessage["content"][number] = {
          type: "thinking",
          thinking: String(part.content ?? ""),
        };
        if (typeof part.signature === "string") block.thinkingSignature = part.signature;
        if (part.id === "redacted_thinking") block.redacted = true;
        content.push(block);
        return;
      }
      case "tool-call": {
        if (
          typeof part.tool_call_id !== "string" ||
          typeof part.tool_name !== "string" ||
          !part.tool_call_id
        ) {
          out.problems.push(`${where}: tool-call without tool_call_id or tool_name`);
          return;
        }
        const block: AssistantMessage["content"][number] = {
          type: "toolCall",
          id: part.tool_call_id,
          name: part.tool_name,
          arguments: toolArguments(part.args),
        };
        const signature = isRecord(part.provider_details)
          ? part.provider_details.thoughtSignature
          : undefined;
        if (typeof signature === "string") block.thoughtSignature = signature;
        content.push(block);
        return;
      }
      default:
        out.problems.push(`${where}: unknown response part_kind ${JSON.stringify(part.part_kind)}`);
    }
  });
  const details = isRecord(message.provider_details) ? message.provider_details : {};
  const usage = isRecord(message.usage) ? message.usage : {};
  const assistant: AssistantMessage = {
    role: "assistant",
    content,
    api: typeof details.api === "string" ? details.api : PARTS_MESSAGES_API,
    provider: stringOr(message.provider_name, options.fallbackProvider ?? UNKNOWN),
    model: stringOr(message.model_name, options.fallbackModel ?? UNKNOWN),
    usage: readUsage(usage, details.cost),
    stopReason:
      FINISH_TO_STOP[String(message.finish_reason)] ??
      (content.some((b) => b.type === "toolCall") ? "toolUse" : "stop"),
    timestamp: epochMs(message.timestamp, options.fallbackTimestamp),
  };
  if (typeof message.provider_response_id === "string") assistant.responseId = message.provider_response_id;
  if (typeof details.errorMessage === "string") assistant.errorMessage = details.errorMessage;
  out.messages.push(assistant);
}

/** Parts messages for canonical ones (see the module comment for the grouping). */
export function canonicalToParts(messages: readonly Message[]): PartsMessage[] {
  const out: PartsMessage[] = [];
  let request: PartsMessage | undefined;
  for (const message of messages) {
    if (message.role === "assistant") {
      request = undefined;
      out.push(responseOf(message));
      continue;
    }
    if (!request) {
      request = { kind: "request", parts: [] };
      out.push(request);
    }
    request.parts.push(message.role === "user" ? userPromptPart(message) : toolReturnPart(message));
  }
  return out;
}

function userPromptPart(message: UserMessage): MessagePart {
  const content =
    typeof message.content === "string"
      ? message.content
      : message.content.map((b) =>
          b.type === "text" ? b.text : { kind: "binary", data: b.data, media_type: b.mimeType },
        );
  return { part_kind: "user-prompt", content, timestamp: isoOf(message.timestamp) };
}

function toolReturnPart(message: Extract<Message, { role: "toolResult" }>): MessagePart {
  const text = message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
  return {
    part_kind: message.isError ? "retry-prompt" : "tool-return",
    tool_name: message.toolName,
    content: text,
    tool_call_id: message.toolCallId,
    timestamp: isoOf(message.timestamp),
  };
}

function responseOf(message: AssistantMessage): PartsMessage {
  const parts: MessagePart[] = message.content.map((block) => {
    if (block.type === "text") {
      return block.textSignature === undefined
        ? { part_kind: "text", content: block.text }
        : { part_kind: "text", content: block.text, id: block.textSignature };
    }
    if (block.type === "thinking") {
      const part: MessagePart = { part_kind: "thinking", content: block.thinking };
      if (block.thinkingSignature !== undefined) part.signature = block.thinkingSignature;
      if (block.redacted) part.id = "redacted_thinking";
      return part;
    }
    const part: MessagePart = {
      part_kind: "tool-call",
      tool_name: block.name,
      args: block.arguments,
      tool_call_id: block.id,
    };
    if (block.thoughtSignature !== undefined)
      part.provider_details = { thoughtSignature: block.thoughtSignature };
    return part;
  });
  const details: Record<string, unknown> = { api: message.api, cost: message.usage.cost };
  if (message.errorMessage !== undefined) details.errorMessage = message.errorMessage;
  const wire: PartsMessage = {
    kind: "response",
    parts,
    usage: {
      input_tokens: message.usage.input,
      output_tokens: message.usage.output,
      cache_read_tokens: message.usage.cacheRead,
      cache_write_tokens: message.usage.cacheWrite,
      total_tokens: message.usage.totalTokens,
    },
    model_name: message.model,
    provider_name: message.provider,
    timestamp: isoOf(message.timestamp),
    finish_reason: STOP_TO_FINISH[message.stopReason],
    provider_details: details,
  };
  if (message.responseId !== undefined) wire.provider_response_id = message.responseId;
  return wire;
}

/** Remove system-prompt parts from parts messages (and requests left empty by that). */
export function stripSystemPromptParts(messages: readonly PartsMessage[]): PartsMessage[] {
  return messages
    .map((m) =>
      m.kind === "request" ? { ...m, parts: m.parts.filter((p) => p.part_kind !== "system-prompt") } : m,
    )
    .filter((m) => m.kind !== "request" || m.parts.length > 0);
}

function legacyAssistant(
  content: AssistantMessage["content"],
  options: ToCanonicalOptions,
): AssistantMessage {
  return {
    role: "assistant",
    content,
    api: PARTS_MESSAGES_API,
    provider: options.fallbackProvider ?? UNKNOWN,
    model: options.fallbackModel ?? UNKNOWN,
    usage: emptyUsage(),
    stopReason: "stop",
    timestamp: options.fallbackTimestamp,
  };
}

function userContent(content: unknown): UserMessage["content"] | undefined {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  const blocks: Exclude<UserMessage["content"], string> = [];
  for (const item of content) {
    if (typeof item === "string") blocks.push({ type: "text", text: item });
    else if (isRecord(item) && typeof item.data === "string" && typeof item.media_type === "string") {
      blocks.push({ type: "image", data: item.data, mimeType: item.media_type });
    } else return undefined;
  }
  return blocks;
}

/** Tool arguments as an object: pydantic-ai allows a JSON string; anything else is wrapped. */
function toolArguments(args: unknown): Record<string, unknown> {
  if (isRecord(args)) return args;
  if (typeof args === "string") {
    try {
      const parsed: unknown = JSON.parse(args);
      if (isRecord(parsed)) return parsed;
    } catch {
      // Not JSON: kept verbatim below so nothing is lost.
    }
    return args === "" ? {} : { input: args };
  }
  return args === undefined || args === null ? {} : { input: args };
}

function readUsage(usage: Record<string, unknown>, cost: unknown): AssistantMessage["usage"] {
  const n = (...keys: string[]) => {
    for (const key of keys) if (typeof usage[key] === "number") return usage[key] as number;
    return 0;
  };
  const input = n("input_tokens", "request_tokens");
  const output = n("output_tokens", "response_tokens");
  const cacheRead = n("cache_read_tokens", "cached_tokens");
  const cacheWrite = n("cache_write_tokens");
  const total =
    typeof usage.total_tokens === "number" ? usage.total_tokens : input + output + cacheRead + cacheWrite;
  const checkedCost = CostSchema.safeParse(cost);
  const parsedCost = checkedCost.success ? checkedCost.data : emptyUsage().cost;
  return { input, output, cacheRead, cacheWrite, totalTokens: total, cost: parsedCost };
}

function epochMs(value: unknown, fallback: number): number {
  if (typeof value === "number") return value;
  if (typeof value === "string") {
    const ms = Date.parse(value);
    if (!Number.isNaN(ms)) return ms;
  }
  return fallback;
}

/** ISO form of epoch ms; a non-finite timestamp (never valid) is written as the epoch start. */
function isoOf(epoch: number): string {
  return new Date(Number.isFinite(epoch) ? epoch : 0).toISOString();
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === "string" && value !== "" ? value : fallback;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
