/**
 * Reads request bodies of the three wire APIs into one {@link NormalizedRequest}.
 * Parsing is lenient: unknown parts are ignored, because the server plays scripts rather than
 * validating requests.
 */
import type { NormalizedMessage, NormalizedRequest, NormalizedToolCall, WireApi } from "./types";

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function parseArgs(value: unknown): Record<string, unknown> {
  if (isRecord(value)) return value;
  try {
    const parsed: unknown = JSON.parse(str(value));
    return isRecord(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** Text of a content field: a string or an array of parts with `text` (images ignored). */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return list(content)
    .map((part) => (isRecord(part) ? str(part.text) || textOf(part.content) : ""))
    .filter(Boolean)
    .join("\n");
}

function fromChat(body: Json): { system: string; messages: NormalizedMessage[] } {
  const system: string[] = [];
  const messages: NormalizedMessage[] = [];
  for (const message of list(body.messages).filter(isRecord)) {
    const role = str(message.role);
    if (role === "system" || role === "developer") system.push(textOf(message.content));
    else if (role === "user") messages.push({ role: "user", text: textOf(message.content) });
    else if (role === "tool") {
      messages.push({ role: "tool", toolCallId: str(message.tool_call_id), text: textOf(message.content) });
    } else if (role === "assistant") {
      const toolCalls = list(message.tool_calls)
        .filter(isRecord)
        .map((call): NormalizedToolCall => {
          const fn = isRecord(call.function) ? call.function : {};
          return { id: str(call.id), name: str(fn.name), arguments: parseArgs(fn.arguments) };
        });
      messages.push({ role: "assistant", text: textOf(message.content), toolCalls });
    }
  }
  return { system: system.join("\n"), messages };
}

function fromResponses(body: Json): { system: string; messages: NormalizedMessage[] } {
  const system: string[] = body.instructions ? [str(body.instructions)] : [];
  const messages: NormalizedMessage[] = [];
  const input = typeof body.input === "string" ? [{ role: "user", content: body.input }] : list(body.input);
  // Consecutive assistant output items (reasoning, message, function_call) form one turn.
  let assistant: Extract<NormalizedMessage, { role: "assistant" }> | undefined;
  const currentAssistant = () => {
    if (!assistant) {
      assistant = { role: "assistant", text: "", toolCalls: [] };
      messages.push(assistant);
    }
    return assistant;
  };
  for (const item of input.filter(isRecord)) {
    const type = str(item.type) || "message";
    const role = str(item.role);
    if (type === "message" && (role === "system" || role === "developer")) {
      system.push(textOf(item.content));
    } else if (type === "message" && role === "user") {
      assistant = undefined;
      messages.push({ role: "user", text: textOf(item.content) });
    } else if (type === "message" && role === "assistant") {
      const turn = currentAssistant();
      turn.text += textOf(item.content);
    } else if (type === "reasoning") {
      currentAssistant();
    } else if (type === "function_call") {
      currentAssistant().toolCalls.push({
        id: str(item.call_id),
        name: str(item.name),
        arguments: parseArgs(item.arguments),
      });
    } else if (type === "function_call_output") {
      assistant = undefined;
      messages.push({ role: "tool", toolCallId: str(item.call_id), text: textOf(item.output) });
    }
  }
  return { system: system.join("\n"), messages };
}

function fromAnthropic(body: Json): { system: string; messages: NormalizedMessage[] } {
  const messages: NormalizedMessage[] = [];
  for (const message of list(body.messages).filter(isRecord)) {
    const blocks =
      typeof message.content === "string" ? [{ type: "text", text: message.content }] : list(message.content);
    if (message.role === "assistant") {
      const parts = blocks.filter(isRecord);
      messages.push({
        role: "assistant",
        text: parts
          .filter((block) => block.type === "text")
          .map((block) => str(block.text))
          .join(""),
        toolCalls: parts
          .filter((block) => block.type === "tool_use")
          .map((block) => ({ id: str(block.id), name: str(block.name), arguments: parseArgs(block.input) })),
      });
      continue;
    }
    const text: string[] = [];
    for (const block of blocks.filter(isRecord)) {
      if (block.type === "tool_result") {
        messages.push({ role: "tool", toolCallId: str(block.tool_use_id), text: textOf(block.content) });
      } else if (block.type === "text") text.push(str(block.text));
    }
    if (text.length > 0) messages.push({ role: "user", text: text.join("\n") });
  }
  return { system: textOf(body.system), messages };
}

function toolNames(api: WireApi, body: Json): string[] {
  return list(body.tools)
    .filter(isRecord)
    .map((tool) =>
      api === "openai-completions" && isRecord(tool.function) ? str(tool.function.name) : str(tool.name),
    )
    .filter(Boolean);
}

function thinkingRequested(api: WireApi, body: Json): boolean {
  if (api === "anthropic-messages") return isRecord(body.thinking) && body.thinking.type === "enabled";
  if (api === "openai-responses") return isRecord(body.reasoning) && Boolean(body.reasoning.effort);
  return Boolean(body.reasoning_effort);
}

export function normalizeRequest(
  api: WireApi,
  body: Json,
  headers: Record<string, string>,
): NormalizedRequest {
  const parsed =
    api === "openai-completions"
      ? fromChat(body)
      : api === "openai-responses"
        ? fromResponses(body)
        : fromAnthropic(body);
  return {
    api,
    model: str(body.model),
    stream: body.stream === true,
    system: parsed.system,
    messages: parsed.messages,
    tools: toolNames(api, body),
    thinking: thinkingRequested(api, body),
    headers,
  };
}
