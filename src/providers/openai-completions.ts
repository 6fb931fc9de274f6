/**
 * OpenAI Chat Completions over the `openai` SDK; works with any compatible server (vLLM,
 * Ollama, LM Studio, OpenRouter) through `baseURL`.
 */
import type OpenAI from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import type { LlmContext, StopReason } from "../core/messages";
import { OpenAiSdkProvider, openAiTokenCounts } from "./openai-client";
import type { OutputBuilder, TokenCounts } from "./output";
import type { SdkRequestOptions } from "./sdk-provider";
import { toChatToolId } from "./tool-call-ids";
import { prepareMessages, textOf } from "./transform";
import type { CompleteOptions, ModelInfo } from "./types";

/** Servers that stream reasoning put it in one of these non-standard delta fields. */
const REASONING_DELTA_FIELDS = ["reasoning_content", "reasoning"] as const;
const EMPTY_TOOL_RESULT = "(no output)";
const NO_CHOICES = "Chat Completions response has no choices";

function mapFinishReason(reason: string | null | undefined): StopReason {
  switch (reason) {
    case "length":
      return "length";
    case "tool_calls":
    case "function_call":
      return "toolUse";
    case "content_filter":
      return "error";
    default:
      return "stop";
  }
}

function toChatMessages(context: LlmContext, model: ModelInfo): ChatCompletionMessageParam[] {
  const params: ChatCompletionMessageParam[] = [];
  if (context.systemPrompt) params.push({ role: "system", content: context.systemPrompt });
  for (const message of prepareMessages(context.messages, model)) {
    if (message.role === "user") {
      if (typeof message.content === "string") {
        params.push({ role: "user", content: message.content });
        continue;
      }
      const parts = message.content.map(
        (block): ChatCompletionContentPart =>
          block.type === "text"
            ? { type: "text", text: block.text }
            : { type: "image_url", image_url: { url: `data:${block.mimeType};base64,${block.data}` } },
      );
      params.push({ role: "user", content: parts });
    } else if (message.role === "toolResult") {
      params.push({
        role: "tool",
        tool_call_id: toChatToolId(message.toolCallId),
        content: textOf(message.content) || EMPTY_TOOL_RESULT,
      });
    } else {
      const text = message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
      const toolCalls = message.content.flatMap((block) =>
        block.type === "toolCall"
          ? [
              {
                id: toChatToolId(block.id),
                type: "function" as const,
                function: { name: block.name, arguments: JSON.stringify(block.arguments) },
              },
            ]
          : [],
      );
      if (!text && toolCalls.length === 0) continue;
      params.push({
        role: "assistant",
        content: text || null,
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      });
    }
  }
  return params;
}

function buildParams(
  model: ModelInfo,
  context: LlmContext,
  options: CompleteOptions,
): ChatCompletionCreateParamsBase {
  const params: ChatCompletionCreateParamsBase = {
    model: model.id,
    messages: toChatMessages(context, model),
    max_completion_tokens: options.maxTokens ?? model.maxOutputTokens,
  };
  if (options.temperature !== undefined) params.temperature = options.temperature;
  if (context.tools?.length) {
    params.tools = context.tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }
  const level = options.thinkingLevel ?? "off";
  if (model.reasoning && level !== "off") params.reasoning_effort = level;
  return params;
}

function usageOf(usage: OpenAI.CompletionUsage): TokenCounts {
  return openAiTokenCounts(
    usage.prompt_tokens,
    usage.completion_tokens,
    usage.prompt_tokens_details?.cached_tokens,
  );
}

function reasoningDelta(delta: object): string {
  const record = delta as Record<string, unknown>;
  for (const field of REASONING_DELTA_FIELDS) {
    const value = record[field];
    if (typeof value === "string" && value) return value;
  }
  return "";
}

function applyChunk(out: OutputBuilder, chunk: ChatCompletionChunk): void {
  out.message.responseId ??= chunk.id;
  if (chunk.usage) out.setUsage(usageOf(chunk.usage));
  const choice = chunk.choices?.[0];
  if (!choice) return;
  const delta = choice.delta;
  const reasoning = reasoningDelta(delta);
  if (reasoning) out.thinking("reasoning", reasoning);
  if (delta.content) out.text("content", delta.content);
  if (delta.refusal) {
    out.text("content", delta.refusal);
    out.setStopReason("error");
  }
  for (const call of delta.tool_calls ?? []) {
    const key = String(call.index);
    if (!out.hasToolCall(key))
      out.startToolCall(key, call.id ?? `call_${call.index}`, call.function?.name ?? "");
    if (call.function?.arguments) out.toolArguments(key, call.function.arguments);
  }
  if (choice.finish_reason && out.message.stopReason !== "error") {
    out.setStopReason(mapFinishReason(choice.finish_reason));
  }
}

export class OpenAiCompletionsProvider extends OpenAiSdkProvider<ChatCompletionCreateParamsBase> {
  protected params(
    model: ModelInfo,
    context: LlmContext,
    options: CompleteOptions,
  ): ChatCompletionCreateParamsBase {
    return buildParams(model, context, options);
  }

  protected async whole(
    out: OutputBuilder,
    params: ChatCompletionCreateParamsBase,
    requestOptions: SdkRequestOptions,
  ): Promise<void> {
    const response = await this.client.chat.completions.create({ ...params, stream: false }, requestOptions);
    out.message.responseId = response.id;
    const choice = response.choices?.[0];
    // Same as a stream without choices: a server hiccup worth retrying, not an empty answer.
    if (!choice) throw new Error(NO_CHOICES);
    const reasoning = reasoningDelta(choice.message);
    if (reasoning) out.thinking("reasoning", reasoning);
    if (choice.message.content) out.text("content", choice.message.content);
    if (choice.message.refusal) out.text("content", choice.message.refusal);
    for (const call of choice.message.tool_calls ?? []) {
      if (call.type !== "function") continue;
      out.startToolCall(call.id, call.id, call.function.name);
      out.toolArguments(call.id, call.function.arguments);
    }
    if (response.usage) out.setUsage(usageOf(response.usage));
    out.setStopReason(choice.message.refusal ? "error" : mapFinishReason(choice.finish_reason));
  }

  protected async streamed(
    out: OutputBuilder,
    params: ChatCompletionCreateParamsBase,
    requestOptions: SdkRequestOptions,
  ): Promise<string | undefined> {
    const chunks = await this.client.chat.completions.create(
      { ...params, stream: true, stream_options: { include_usage: true } },
      requestOptions,
    );
    let finished = false;
    let anyChoice = false;
    for await (const chunk of chunks) {
      applyChunk(out, chunk);
      anyChoice ||= (chunk.choices?.length ?? 0) > 0;
      if (chunk.choices?.[0]?.finish_reason) finished = true;
    }
    if (!anyChoice) return NO_CHOICES;
    if (!finished) return "Chat Completions stream ended without a finish reason";
    return undefined;
  }
}
