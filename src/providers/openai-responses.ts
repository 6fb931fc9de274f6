/**
 * OpenAI Responses API over the `openai` SDK. Requests are stateless (`store: false`):
 * reasoning is replayed from its encrypted item, kept whole in the thinking block's signature.
 */
import type OpenAI from "openai";
import type {
  ResponseCreateParamsBase,
  ResponseInputContent,
  ResponseInputItem,
  ResponseOutputItem,
  ResponseStreamEvent,
  ResponseUsage,
} from "openai/resources/responses/responses";
import type { LlmContext } from "../core/messages";
import { OpenAiSdkProvider, openAiTokenCounts } from "./openai-client";
import type { OutputBuilder, TokenCounts } from "./output";
import type { SdkRequestOptions } from "./sdk-provider";
import { joinResponsesId, toResponsesToolIds } from "./tool-call-ids";
import { isSameModel, prepareMessages, textOf } from "./transform";
import type { CompleteOptions, ModelInfo } from "./types";

const EMPTY_TOOL_RESULT = "(no output)";

/** The reasoning item stored in a thinking signature; undefined when absent or not an item. */
function reasoningItemOf(signature: string | undefined): ResponseInputItem | undefined {
  if (!signature) return undefined;
  try {
    const item: unknown = JSON.parse(signature);
    const isReasoning =
      typeof item === "object" && item !== null && (item as { type?: unknown }).type === "reasoning";
    return isReasoning ? (item as ResponseInputItem) : undefined;
  } catch {
    return undefined;
  }
}

function toResponsesInput(context: LlmContext, model: ModelInfo): ResponseInputItem[] {
  const items: ResponseInputItem[] = [];
  for (const message of prepareMessages(context.messages, model)) {
    if (message.role === "user") {
      const blocks =
        typeof message.content === "string"
          ? [{ type: "text" as const, text: message.content }]
          : message.content;
      const content = blocks.map(
        (block): ResponseInputContent =>
          block.type === "text"
            ? { type: "input_text", text: block.text }
            : {
                type: "input_image",
                detail: "auto",
                image_url: `data:${block.mimeType};base64,${block.data}`,
              },
      );
      items.push({ role: "user", content });
    } else if (message.role === "toolResult") {
      items.push({
        type: "function_call_output",
        call_id: toResponsesToolIds(message.toolCallId).callId,
        output: textOf(message.content) || EMPTY_TOOL_RESULT,
      });
    } else {
      const sameModel = isSameModel(message, model);
      for (const block of message.content) {
        if (block.type === "thinking") {
          // Only this model can read its own encrypted reasoning; foreign thinking was
          // already turned into text by prepareMessages.
          const reasoning = sameModel ? reasoningItemOf(block.thinkingSignature) : undefined;
          if (reasoning) items.push(reasoning);
        } else if (block.type === "text") {
          if (sameModel && block.textSignature) {
            items.push({
              type: "message",
              role: "assistant",
              id: block.textSignature,
              status: "completed",
              content: [{ type: "output_text", text: block.text, annotations: [] }],
            });
          } else if (block.text.trim()) items.push({ role: "assistant", content: block.text });
        } else {
          const { callId, itemId } = toResponsesToolIds(block.id);
          items.push({
            type: "function_call",
            id: itemId,
            call_id: callId,
            name: block.name,
            arguments: JSON.stringify(block.arguments),
          });
        }
      }
    }
  }
  return items;
}

function buildParams(
  model: ModelInfo,
  context: LlmContext,
  options: CompleteOptions,
): ResponseCreateParamsBase {
  const params: ResponseCreateParamsBase = {
    model: model.id,
    input: toResponsesInput(context, model),
    store: false,
    max_output_tokens: options.maxTokens ?? model.maxOutputTokens,
  };
  if (context.systemPrompt) params.instructions = context.systemPrompt;
  if (options.temperature !== undefined) params.temperature = options.temperature;
  if (context.tools?.length) {
    params.tools = context.tools.map((tool) => ({
      type: "function",
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      strict: false,
    }));
  }
  const level = options.thinkingLevel ?? "off";
  if (model.reasoning && level !== "off") {
    params.reasoning = { effort: level, summary: "auto" };
    params.include = ["reasoning.encrypted_content"];
  }
  return params;
}

function usageOf(usage: ResponseUsage): TokenCounts {
  return openAiTokenCounts(
    usage.input_tokens,
    usage.output_tokens,
    usage.input_tokens_details?.cached_tokens,
  );
}

function reasoningText(item: Extract<ResponseOutputItem, { type: "reasoning" }>): string {
  return item.summary.map((part) => part.text).join("\n\n");
}

/** Completes a streamed block from its final item, or adds the whole item (non-streaming). */
function applyItem(out: OutputBuilder, item: ResponseOutputItem): void {
  if (item.type === "reasoning") {
    const thinking = out.thinking(item.id, "");
    // The final item holds the whole summary, its parts joined; it replaces the streamed deltas.
    const summary = reasoningText(item);
    if (summary) thinking.thinking = summary;
    thinking.thinkingSignature = JSON.stringify(item);
  } else if (item.type === "message") {
    const text = item.content
      .map((part) => (part.type === "output_text" ? part.text : part.refusal))
      .join("");
    const streamed = out.textBlock(item.id);
    if (streamed) streamed.textSignature = item.id;
    else out.text(item.id, text, item.id);
  } else if (item.type === "function_call") {
    const key = item.id ?? item.call_id;
    if (!out.hasToolCall(key)) out.startToolCall(key, joinResponsesId(item.call_id, item.id), item.name);
    out.setToolArguments(key, item.arguments);
  }
}

function applyResponse(out: OutputBuilder, response: OpenAI.Responses.Response): void {
  out.message.responseId = response.id;
  if (response.usage) out.setUsage(usageOf(response.usage));
  if (response.status === "incomplete") {
    out.setStopReason(response.incomplete_details?.reason === "content_filter" ? "error" : "length");
  }
}

/** Applies one stream event; returns true when the response is complete. */
function applyEvent(out: OutputBuilder, event: ResponseStreamEvent): boolean {
  switch (event.type) {
    case "response.created":
      out.message.responseId = event.response.id;
      return false;
    case "response.output_item.added":
      if (event.item.type === "function_call") {
        const key = event.item.id ?? event.item.call_id;
        out.startToolCall(key, joinResponsesId(event.item.call_id, event.item.id), event.item.name);
      } else if (event.item.type === "reasoning") out.thinking(event.item.id, "");
      return false;
    case "response.reasoning_summary_text.delta":
    case "response.reasoning_text.delta":
      out.thinking(event.item_id, event.delta);
      return false;
    case "response.output_text.delta":
      out.text(event.item_id, event.delta, event.item_id);
      return false;
    case "response.function_call_arguments.delta":
      out.toolArguments(event.item_id, event.delta);
      return false;
    case "response.output_item.done":
      applyItem(out, event.item);
      return false;
    case "response.completed":
    case "response.incomplete":
      applyResponse(out, event.response);
      return true;
    case "response.failed":
      throw Object.assign(new Error(event.response.error?.message ?? "Response failed"), {
        code: event.response.error?.code,
      });
    case "error":
      throw Object.assign(new Error(event.message), { code: event.code });
    default:
      return false;
  }
}

export class OpenAiResponsesProvider extends OpenAiSdkProvider<ResponseCreateParamsBase> {
  protected params(
    model: ModelInfo,
    context: LlmContext,
    options: CompleteOptions,
  ): ResponseCreateParamsBase {
    return buildParams(model, context, options);
  }

  protected async whole(
    out: OutputBuilder,
    params: ResponseCreateParamsBase,
    requestOptions: SdkRequestOptions,
  ): Promise<void> {
    const response = await this.client.responses.create({ ...params, stream: false }, requestOptions);
    for (const item of response.output) applyItem(out, item);
    applyResponse(out, response);
  }

  protected async streamed(
    out: OutputBuilder,
    params: ResponseCreateParamsBase,
    requestOptions: SdkRequestOptions,
  ): Promise<string | undefined> {
    const events = await this.client.responses.create({ ...params, stream: true }, requestOptions);
    let completed = false;
    for await (const event of events) completed = applyEvent(out, event) || completed;
    return completed ? undefined : "Responses stream ended before response.completed";
  }
}
