/**
 * Encodes a scripted reply in each wire format: a whole JSON body, or the exact SSE event
 * sequence the official SDKs parse.
 */
import { createHash } from "node:crypto";
import type { NormalizedRequest, Turn, TurnUsage, WireApi } from "./types";

const CHARS_PER_TOKEN = 4;
const ID_HASH_CHARS = 16;

export interface SseEvent {
  /** SSE `event:` name; omitted for Chat Completions. */
  event?: string;
  data: unknown;
  /** Counts as one generated token for pacing. */
  isDelta?: boolean;
}

interface ReplyToolCall {
  /** Chat `id` and Responses `call_id`. */
  callId: string;
  /** Responses item `id`. */
  itemId: string;
  /** Anthropic `tool_use` id. */
  toolUseId: string;
  name: string;
  argumentsJson: string;
}

/** A turn with ids, usage and stop reason fixed; the same for every wire. */
export interface Reply {
  id: string;
  model: string;
  thinking?: string;
  thinkingSignature: string;
  text?: string;
  toolCalls: ReplyToolCall[];
  usage: TurnUsage;
  stop: "stop" | "length" | "refusal" | "toolUse";
}

function hash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, ID_HASH_CHARS);
}

function estimateTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/**
 * Deterministic: ids derive from scenario, first user message and turn index. Scripted
 * thinking is sent only when the request asked for thinking, as real providers do.
 */
export function buildReply(
  request: NormalizedRequest,
  scripted: Turn,
  scenario: string,
  turnIndex: number,
): Reply {
  const { thinking: scriptedThinking, ...withoutThinking } = scripted;
  const turn: Turn = request.thinking && scriptedThinking ? scripted : withoutThinking;
  const firstUser = request.messages.find((message) => message.role === "user")?.text ?? "";
  const base = hash(`${scenario}\0${firstUser}\0${turnIndex}`);
  const toolCalls = (turn.toolCalls ?? []).map((call, index) => ({
    callId: call.id ?? `call_${base}_${index}`,
    itemId: `fc_${base}_${index}`,
    toolUseId: call.id ?? `toolu_${base}_${index}`,
    name: call.name,
    argumentsJson: JSON.stringify(call.arguments),
  }));
  const outputChars =
    (turn.text?.length ?? 0) +
    (turn.thinking?.length ?? 0) +
    toolCalls.reduce((sum, call) => sum + call.name.length + call.argumentsJson.length, 0);
  const inputChars = JSON.stringify([request.system, request.messages, request.tools]).length;
  return {
    id: base,
    model: request.model,
    ...(turn.thinking ? { thinking: turn.thinking } : {}),
    thinkingSignature: `sig_${hash(turn.thinking ?? "")}`,
    ...(turn.text ? { text: turn.text } : {}),
    toolCalls,
    usage: {
      input: turn.usage?.input ?? estimateTokens(inputChars),
      output: turn.usage?.output ?? Math.max(1, estimateTokens(outputChars)),
      cacheRead: turn.usage?.cacheRead ?? 0,
      cacheWrite: turn.usage?.cacheWrite ?? 0,
    },
    stop:
      turn.stopReason && turn.stopReason !== "stop"
        ? turn.stopReason
        : toolCalls.length > 0
          ? "toolUse"
          : "stop",
  };
}

/** Splits text into word-sized deltas (one pacing unit each). */
export function chunks(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

const created = () => Math.floor(Date.now() / 1000);

// ---------------------------------------------------------------- OpenAI Chat Completions

const CHAT_FINISH = {
  stop: "stop",
  length: "length",
  refusal: "content_filter",
  toolUse: "tool_calls",
} as const;

function chatUsage(reply: Reply) {
  const prompt = reply.usage.input + reply.usage.cacheRead;
  return {
    prompt_tokens: prompt,
    completion_tokens: reply.usage.output,
    total_tokens: prompt + reply.usage.output,
    prompt_tokens_details: { cached_tokens: reply.usage.cacheRead },
  };
}

function chatToolCalls(reply: Reply) {
  return reply.toolCalls.map((call) => ({
    id: call.callId,
    type: "function",
    function: { name: call.name, arguments: call.argumentsJson },
  }));
}

function chatJson(reply: Reply) {
  return {
    id: `chatcmpl-${reply.id}`,
    object: "chat.completion",
    created: created(),
    model: reply.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: reply.text ?? null,
          refusal: null,
          ...(reply.thinking ? { reasoning_content: reply.thinking } : {}),
          ...(reply.toolCalls.length > 0 ? { tool_calls: chatToolCalls(reply) } : {}),
        },
        finish_reason: CHAT_FINISH[reply.stop],
        logprobs: null,
      },
    ],
    usage: chatUsage(reply),
  };
}

function chatEvents(reply: Reply): SseEvent[] {
  const chunk = (delta: object, finishReason: string | null = null, isDelta = true): SseEvent => ({
    data: {
      id: `chatcmpl-${reply.id}`,
      object: "chat.completion.chunk",
      created: created(),
      model: reply.model,
      choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
    },
    isDelta,
  });
  const events: SseEvent[] = [chunk({ role: "assistant", content: "" }, null, false)];
  for (const part of chunks(reply.thinking ?? "")) events.push(chunk({ reasoning_content: part }));
  for (const part of chunks(reply.text ?? "")) events.push(chunk({ content: part }));
  reply.toolCalls.forEach((call, index) => {
    events.push(
      chunk({
        tool_calls: [
          { index, id: call.callId, type: "function", function: { name: call.name, arguments: "" } },
        ],
      }),
    );
    for (const part of chunks(call.argumentsJson)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
    }
  });
  events.push(chunk({}, CHAT_FINISH[reply.stop], false));
  events.push({
    data: {
      id: `chatcmpl-${reply.id}`,
      object: "chat.completion.chunk",
      created: created(),
      model: reply.model,
      choices: [],
      usage: chatUsage(reply),
    },
  });
  events.push({ data: "[DONE]" });
  return events;
}

// ---------------------------------------------------------------- OpenAI Responses

function responsesUsage(reply: Reply) {
  const input = reply.usage.input + reply.usage.cacheRead;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: reply.usage.cacheRead },
    output_tokens: reply.usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + reply.usage.output,
  };
}

function reasoningItem(reply: Reply) {
  return {
    id: `rs_${reply.id}`,
    type: "reasoning",
    summary: [{ type: "summary_text", text: reply.thinking ?? "" }],
    encrypted_content: Buffer.from(reply.thinking ?? "").toString("base64"),
  };
}

function messageItem(reply: Reply, status: "in_progress" | "completed") {
  const content =
    status === "completed" ? [{ type: "output_text", text: reply.text ?? "", annotations: [] }] : [];
  return { id: `msg_${reply.id}`, type: "message", role: "assistant", status, content };
}

function functionCallItem(call: ReplyToolCall, status: "in_progress" | "completed") {
  return {
    id: call.itemId,
    type: "function_call",
    call_id: call.callId,
    name: call.name,
    arguments: status === "completed" ? call.argumentsJson : "",
    status,
  };
}

function responseObject(reply: Reply, status: "in_progress" | "completed" | "incomplete", output: unknown[]) {
  return {
    id: `resp_${reply.id}`,
    object: "response",
    created_at: created(),
    status,
    model: reply.model,
    output,
    error: null,
    incomplete_details:
      status === "incomplete"
        ? { reason: reply.stop === "refusal" ? "content_filter" : "max_output_tokens" }
        : null,
    usage: status === "in_progress" ? null : responsesUsage(reply),
  };
}

function responsesOutput(reply: Reply): unknown[] {
  return [
    ...(reply.thinking ? [reasoningItem(reply)] : []),
    ...(reply.text ? [messageItem(reply, "completed")] : []),
    ...reply.toolCalls.map((call) => functionCallItem(call, "completed")),
  ];
}

const finalStatus = (reply: Reply) =>
  reply.stop === "length" || reply.stop === "refusal" ? "incomplete" : "completed";

function responsesJson(reply: Reply) {
  return responseObject(reply, finalStatus(reply), responsesOutput(reply));
}

function responsesEvents(reply: Reply): SseEvent[] {
  const events: SseEvent[] = [];
  const emit = (type: string, payload: object, isDelta = false) =>
    events.push({ event: type, data: { type, sequence_number: events.length, ...payload }, isDelta });
  emit("response.created", { response: responseObject(reply, "in_progress", []) });
  emit("response.in_progress", { response: responseObject(reply, "in_progress", []) });
  let outputIndex = 0;
  if (reply.thinking) {
    const item = reasoningItem(reply);
    emit("response.output_item.added", { output_index: outputIndex, item: { ...item, summary: [] } });
    const part = { item_id: item.id, output_index: outputIndex, summary_index: 0 };
    emit("response.reasoning_summary_part.added", { ...part, part: { type: "summary_text", text: "" } });
    for (const delta of chunks(reply.thinking))
      emit("response.reasoning_summary_text.delta", { ...part, delta }, true);
    emit("response.reasoning_summary_text.done", { ...part, text: reply.thinking });
    emit("response.reasoning_summary_part.done", {
      ...part,
      part: { type: "summary_text", text: reply.thinking },
    });
    emit("response.output_item.done", { output_index: outputIndex, item });
    outputIndex += 1;
  }
  if (reply.text) {
    const itemId = `msg_${reply.id}`;
    const part = { item_id: itemId, output_index: outputIndex, content_index: 0 };
    emit("response.output_item.added", {
      output_index: outputIndex,
      item: messageItem(reply, "in_progress"),
    });
    emit("response.content_part.added", {
      ...part,
      part: { type: "output_text", text: "", annotations: [] },
    });
    for (const delta of chunks(reply.text))
      emit("response.output_text.delta", { ...part, delta, logprobs: [] }, true);
    emit("response.output_text.done", { ...part, text: reply.text, logprobs: [] });
    emit("response.content_part.done", {
      ...part,
      part: { type: "output_text", text: reply.text, annotations: [] },
    });
    emit("response.output_item.done", { output_index: outputIndex, item: messageItem(reply, "completed") });
    outputIndex += 1;
  }
  for (const call of reply.toolCalls) {
    emit("response.output_item.added", {
      output_index: outputIndex,
      item: functionCallItem(call, "in_progress"),
    });
    for (const delta of chunks(call.argumentsJson)) {
      emit(
        "response.function_call_arguments.delta",
        { item_id: call.itemId, output_index: outputIndex, delta },
        true,
      );
    }
    emit("response.function_call_arguments.done", {
      item_id: call.itemId,
      output_index: outputIndex,
      arguments: call.argumentsJson,
    });
    emit("response.output_item.done", {
      output_index: outputIndex,
      item: functionCallItem(call, "completed"),
    });
    outputIndex += 1;
  }
  const status = finalStatus(reply);
  emit(`response.${status}`, { response: responseObject(reply, status, responsesOutput(reply)) });
  return events;
}

// ---------------------------------------------------------------- Anthropic Messages

const ANTHROPIC_STOP = {
  stop: "end_turn",
  length: "max_tokens",
  refusal: "refusal",
  toolUse: "tool_use",
} as const;

function anthropicUsage(reply: Reply, output: number) {
  return {
    input_tokens: reply.usage.input,
    output_tokens: output,
    cache_read_input_tokens: reply.usage.cacheRead,
    cache_creation_input_tokens: reply.usage.cacheWrite,
  };
}

function anthropicBlocks(reply: Reply) {
  return [
    ...(reply.thinking
      ? [{ type: "thinking", thinking: reply.thinking, signature: reply.thinkingSignature }]
      : []),
    ...(reply.text ? [{ type: "text", text: reply.text }] : []),
    ...reply.toolCalls.map((call) => ({
      type: "tool_use",
      id: call.toolUseId,
      name: call.name,
      input: JSON.parse(call.argumentsJson),
    })),
  ];
}

function anthropicMessage(reply: Reply, content: unknown[], stop: string | null, output: number) {
  return {
    id: `msg_${reply.id}`,
    type: "message",
    role: "assistant",
    model: reply.model,
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: anthropicUsage(reply, output),
  };
}

function anthropicJson(reply: Reply) {
  return anthropicMessage(reply, anthropicBlocks(reply), ANTHROPIC_STOP[reply.stop], reply.usage.output);
}

function anthropicEvents(reply: Reply): SseEvent[] {
  const events: SseEvent[] = [];
  const emit = (type: string, payload: object, isDelta = false) =>
    events.push({ event: type, data: { type, ...payload }, isDelta });
  emit("message_start", { message: anthropicMessage(reply, [], null, 1) });
  anthropicBlocks(reply).forEach((block, index) => {
    if (block.type === "thinking") {
      emit("content_block_start", {
        index,
        content_block: { type: "thinking", thinking: "", signature: "" },
      });
      for (const thinking of chunks(reply.thinking ?? "")) {
        emit("content_block_delta", { index, delta: { type: "thinking_delta", thinking } }, true);
      }
      emit("content_block_delta", {
        index,
        delta: { type: "signature_delta", signature: reply.thinkingSignature },
      });
    } else if (block.type === "text") {
      emit("content_block_start", { index, content_block: { type: "text", text: "" } });
      for (const text of chunks(reply.text ?? ""))
        emit("content_block_delta", { index, delta: { type: "text_delta", text } }, true);
    } else if (block.type === "tool_use" && "id" in block) {
      emit("content_block_start", {
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
      });
      for (const partial_json of chunks(JSON.stringify(block.input))) {
        emit("content_block_delta", { index, delta: { type: "input_json_delta", partial_json } }, true);
      }
    }
    emit("content_block_stop", { index });
  });
  emit("message_delta", {
    delta: { stop_reason: ANTHROPIC_STOP[reply.stop], stop_sequence: null },
    usage: anthropicUsage(reply, reply.usage.output),
  });
  emit("message_stop", {});
  return events;
}

export function encodeJson(api: WireApi, reply: Reply): unknown {
  if (api === "openai-completions") return chatJson(reply);
  if (api === "openai-responses") return responsesJson(reply);
  return anthropicJson(reply);
}

export function encodeEvents(api: WireApi, reply: Reply): SseEvent[] {
  if (api === "openai-completions") return chatEvents(reply);
  if (api === "openai-responses") return responsesEvents(reply);
  return anthropicEvents(reply);
}

export function formatSse(event: SseEvent): string {
  const data = typeof event.data === "string" ? event.data : JSON.stringify(event.data);
  return `${event.event ? `event: ${event.event}\n` : ""}data: ${data}\n\n`;
}

// ---------------------------------------------------------------- errors

export interface ErrorReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** An error body in the wire's own shape (OpenAI `{error: …}`, Anthropic `{type: "error", error: …}`). */
export function errorReply(
  api: WireApi,
  status: number,
  type: string,
  message: string,
  code?: string,
  headers?: Record<string, string>,
): ErrorReply {
  const body =
    api === "anthropic-messages"
      ? { type: "error", error: { type, message } }
      : { error: { message, type, param: null, code: code ?? null } };
  return { status, body, ...(headers ? { headers } : {}) };
}
