/**
 * Anthropic Messages API over `@anthropic-ai/sdk`, streaming by default. The SDK is loaded at the
 * first call (about 19 MB of a worker's memory, which workers serving only OpenAI-API models do
 * not need).
 */
import type Anthropic from "@anthropic-ai/sdk";
import type {
  StopReason as AnthropicStopReason,
  ContentBlock,
  ContentBlockParam,
  MessageCreateParamsBase,
  MessageParam,
  RawMessageStreamEvent,
  TextBlockParam,
  ToolResultBlockParam,
} from "@anthropic-ai/sdk/resources/messages";
import type { LlmContext, StopReason, ToolResultMessage, UserMessage } from "../core/messages";
import type { OutputBuilder, TokenCounts } from "./output";
import { SdkProvider, type SdkRequestOptions } from "./sdk-provider";
import { toAnthropicToolId } from "./tool-call-ids";
import { isSameModel, prepareMessages } from "./transform";
import type { AnthropicConnection, CompleteOptions, ModelInfo, ThinkingLevel } from "./types";

/** Thinking budget per level, in tokens (Anthropic's minimum budget is 1024). */
const THINKING_BUDGET: Record<Exclude<ThinkingLevel, "off">, number> = {
  minimal: 1024,
  low: 4096,
  medium: 10240,
  high: 24576,
};
const MIN_THINKING_BUDGET = 1024;
/** Room kept for the visible answer when the thinking budget is capped by max_tokens. */
const ANSWER_TOKENS_RESERVE = 1024;
const CACHE_CONTROL = { type: "ephemeral" } as const;
const EMPTY_TOOL_RESULT = "(no output)";

function mapStopReason(reason: AnthropicStopReason | null): StopReason {
  switch (reason) {
    case "max_tokens":
      return "length";
    case "tool_use":
      return "toolUse";
    case "refusal":
      return "error";
    default:
      return "stop";
  }
}

function userContent(message: UserMessage | ToolResultMessage): ContentBlockParam[] {
  const blocks =
    typeof message.content === "string"
      ? [{ type: "text" as const, text: message.content }]
      : message.content;
  return blocks.flatMap((block): ContentBlockParam[] => {
    if (block.type === "text") return block.text.trim() ? [{ type: "text", text: block.text }] : [];
    // The SDK types media_type as a union of four image types; the canonical block carries a
    // free-form MIME type, and the API itself reports an unsupported one.
    return [
      {
        type: "image",
        source: { type: "base64", media_type: block.mimeType as "image/png", data: block.data },
      },
    ];
  });
}

function toolResultBlock(message: ToolResultMessage): ToolResultBlockParam {
  const content = userContent(message).filter(
    (block): block is Extract<ContentBlockParam, { type: "text" | "image" }> =>
      block.type === "text" || block.type === "image",
  );
  return {
    type: "tool_result",
    tool_use_id: toAnthropicToolId(message.toolCallId),
    content: content.length > 0 ? content : [{ type: "text", text: EMPTY_TOOL_RESULT }],
    is_error: message.isError,
  };
}

/** Converts the canonical history; consecutive tool results share one user message. */
function toAnthropicMessages(context: LlmContext, model: ModelInfo, cache: boolean): MessageParam[] {
  const params: MessageParam[] = [];
  for (const message of prepareMessages(context.messages, model)) {
    if (message.role === "user") {
      const content = userContent(message);
      if (content.length > 0) params.push({ role: "user", content });
    } else if (message.role === "toolResult") {
      const previous = params.at(-1);
      const previousIsResults =
        previous?.role === "user" &&
        Array.isArray(previous.content) &&
        previous.content.every((block) => block.type === "tool_result");
      if (previousIsResults && Array.isArray(previous.content))
        previous.content.push(toolResultBlock(message));
      else params.push({ role: "user", content: [toolResultBlock(message)] });
    } else {
      const replaySignatures = isSameModel(message, model);
      const content = message.content.flatMap((block): ContentBlockParam[] => {
        if (block.type === "text") return block.text.trim() ? [{ type: "text", text: block.text }] : [];
        if (block.type === "toolCall") {
          return [
            { type: "tool_use", id: toAnthropicToolId(block.id), name: block.name, input: block.arguments },
          ];
        }
        if (block.redacted && block.thinkingSignature) {
          return [{ type: "redacted_thinking", data: block.thinkingSignature }];
        }
        if (!block.thinking.trim()) return [];
        if (replaySignatures && block.thinkingSignature) {
          return [{ type: "thinking", thinking: block.thinking, signature: block.thinkingSignature }];
        }
        return [{ type: "text", text: block.thinking }];
      });
      if (content.length > 0) params.push({ role: "assistant", content });
    }
  }
  const last = params.at(-1);
  if (cache && last?.role === "user" && Array.isArray(last.content)) {
    const lastBlock = last.content.at(-1);
    if (lastBlock?.type === "text" || lastBlock?.type === "image" || lastBlock?.type === "tool_result") {
      lastBlock.cache_control = CACHE_CONTROL;
    }
  }
  return params;
}

/**
 * The SDK's request type no longer lists `temperature`, but the Messages API still accepts it
 * for models that support sampling settings; it is sent only when the caller asks for it.
 */
type MessageParams = MessageCreateParamsBase & { temperature?: number };

function buildParams(model: ModelInfo, context: LlmContext, options: CompleteOptions, cache: boolean) {
  let maxTokens = options.maxTokens ?? model.maxOutputTokens;
  const params: MessageParams = {
    model: model.id,
    max_tokens: maxTokens,
    messages: toAnthropicMessages(context, model, cache),
  };
  if (context.systemPrompt) {
    const system: TextBlockParam = { type: "text", text: context.systemPrompt };
    if (cache) system.cache_control = CACHE_CONTROL;
    params.system = [system];
  }
  if (context.tools?.length) {
    params.tools = context.tools.map((tool, index) => ({
      name: tool.name,
      description: tool.description,
      input_schema: { ...tool.parameters, type: "object" as const },
      ...(cache && index === context.tools!.length - 1 ? { cache_control: CACHE_CONTROL } : {}),
    }));
  }
  const level = options.thinkingLevel ?? "off";
  if (model.reasoning && level !== "off") {
    let budget = THINKING_BUDGET[level];
    if (budget + ANSWER_TOKENS_RESERVE > maxTokens) {
      if (options.maxTokens === undefined) maxTokens = budget + ANSWER_TOKENS_RESERVE;
      else budget = Math.max(MIN_THINKING_BUDGET, maxTokens - ANSWER_TOKENS_RESERVE);
    }
    params.max_tokens = maxTokens;
    params.thinking = { type: "enabled", budget_tokens: budget };
  } else if (options.temperature !== undefined) {
    // Anthropic rejects a temperature together with extended thinking.
    params.temperature = options.temperature;
  }
  return params;
}

function usageOf(usage: {
  input_tokens: number | null;
  output_tokens: number | null;
  cache_read_input_tokens: number | null;
  cache_creation_input_tokens: number | null;
}): TokenCounts {
  return {
    input: usage.input_tokens ?? 0,
    output: usage.output_tokens ?? 0,
    cacheRead: usage.cache_read_input_tokens ?? 0,
    cacheWrite: usage.cache_creation_input_tokens ?? 0,
  };
}

/** The counts a `message_delta` usage actually carries (absent and null fields left out). */
function reportedCounts(usage: {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}): Partial<TokenCounts> {
  const fields = {
    input: usage.input_tokens,
    output: usage.output_tokens,
    cacheRead: usage.cache_read_input_tokens,
    cacheWrite: usage.cache_creation_input_tokens,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => typeof value === "number"));
}

function pushWholeBlock(out: OutputBuilder, block: ContentBlock): void {
  if (block.type === "text") out.push({ type: "text", text: block.text });
  else if (block.type === "thinking") {
    out.push({ type: "thinking", thinking: block.thinking, thinkingSignature: block.signature });
  } else if (block.type === "redacted_thinking") {
    out.push({ type: "thinking", thinking: "", thinkingSignature: block.data, redacted: true });
  } else if (block.type === "tool_use") {
    const input = (block.input ?? {}) as Record<string, unknown>;
    out.push({ type: "toolCall", id: block.id, name: block.name, arguments: input });
  }
}

function applyStreamEvent(out: OutputBuilder, event: RawMessageStreamEvent, usage: TokenCounts): void {
  const key = "index" in event ? String(event.index) : "";
  switch (event.type) {
    case "message_start":
      out.message.responseId = event.message.id;
      Object.assign(usage, usageOf(event.message.usage));
      out.setUsage(usage);
      return;
    case "content_block_start": {
      const block = event.content_block;
      if (block.type === "text") out.text(key, block.text);
      else if (block.type === "thinking") out.thinking(key, block.thinking);
      else if (block.type === "redacted_thinking") {
        const thinking = out.thinking(key, "");
        thinking.redacted = true;
        thinking.thinkingSignature = block.data;
      } else if (block.type === "tool_use") out.startToolCall(key, block.id, block.name);
      return;
    }
    case "content_block_delta": {
      const delta = event.delta;
      if (delta.type === "text_delta") out.text(key, delta.text);
      else if (delta.type === "thinking_delta") out.thinking(key, delta.thinking);
      else if (delta.type === "signature_delta") {
        const thinking = out.thinking(key, "");
        thinking.thinkingSignature = (thinking.thinkingSignature ?? "") + delta.signature;
      } else if (delta.type === "input_json_delta") out.toolArguments(key, delta.partial_json);
      return;
    }
    case "message_delta": {
      out.setStopReason(mapStopReason(event.delta.stop_reason));
      // Counts here are cumulative, and a field that is absent (Anthropic's own streams send only
      // `output_tokens`) or null keeps the value message_start reported.
      Object.assign(usage, reportedCounts(event.usage));
      out.setUsage(usage);
      return;
    }
    default:
      return;
  }
}

export class AnthropicProvider extends SdkProvider<MessageParams> {
  private client?: Promise<Anthropic>;
  private readonly cache: boolean;

  constructor(private readonly connection: AnthropicConnection) {
    super(connection);
    this.cache = connection.promptCaching ?? true;
  }

  private sdkClient(): Promise<Anthropic> {
    const { connection } = this;
    if (this.client) return this.client;
    this.client = import("@anthropic-ai/sdk").then((sdk) => {
      // TypeScript types a dynamic import with the package's ESM declarations and the type import
      // above with its CommonJS ones: the same class, declared twice.
      const AnthropicSdk = sdk.default as unknown as typeof Anthropic;
      return new AnthropicSdk({
        apiKey: connection.apiKey,
        baseURL: connection.baseURL ?? null,
        defaultHeaders: connection.headers,
        ...(connection.fetch ? { fetch: connection.fetch } : {}),
        maxRetries: 0,
        ...(connection.timeoutMs !== undefined ? { timeout: connection.timeoutMs } : {}),
      });
    });
    return this.client;
  }

  protected params(model: ModelInfo, context: LlmContext, options: CompleteOptions): MessageParams {
    return buildParams(model, context, options, this.cache);
  }

  protected async whole(
    out: OutputBuilder,
    params: MessageParams,
    requestOptions: SdkRequestOptions,
  ): Promise<void> {
    const client = await this.sdkClient();
    const response = await client.messages.create({ ...params, stream: false }, requestOptions);
    out.message.responseId = response.id;
    for (const block of response.content) pushWholeBlock(out, block);
    out.setUsage(usageOf(response.usage));
    out.setStopReason(mapStopReason(response.stop_reason));
  }

  protected async streamed(
    out: OutputBuilder,
    params: MessageParams,
    requestOptions: SdkRequestOptions,
  ): Promise<string | undefined> {
    const client = await this.sdkClient();
    const events = await client.messages.create({ ...params, stream: true }, requestOptions);
    const usage: TokenCounts = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
    let stopped = false;
    for await (const event of events) {
      applyStreamEvent(out, event, usage);
      if (event.type === "message_stop") stopped = true;
    }
    return stopped ? undefined : "Anthropic stream ended before message_stop";
  }
}
