/**
 * Accumulates one assistant message from streamed (or whole) provider output and turns the
 * end of a call — success, error or abort — into a {@link ProviderResult}.
 */
import { randomUUID } from "node:crypto";
import type {
  AssistantMessage,
  LlmContext,
  StopReason,
  TextBlock,
  ThinkingBlock,
  ToolCallBlock,
} from "../core/messages";
import { CHARS_PER_TOKEN, estimateContextTokens, estimateTokens } from "../core/tokens";
import { emptyUsage } from "../core/usage";
import { classifyError } from "./errors";
import { parseTextToolCalls } from "./fallback-tool-calls";
import { computeCost } from "./models";
import type {
  CompleteOptions,
  ContentDelta,
  ModelInfo,
  ProgressInfo,
  ProviderError,
  ProviderResult,
} from "./types";

/** A completed response whose stop reason means "no answer" (refusal, content filter). */
const REFUSAL_MESSAGE = "The provider declined to answer (refusal or content filter)";

export interface TokenCounts {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** A tool call whose JSON arguments are still arriving. */
interface OpenToolCall {
  block: ToolCallBlock;
  json: string;
}

function parseArguments(json: string): Record<string, unknown> {
  if (json.trim() === "") return {};
  try {
    const parsed: unknown = JSON.parse(json);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    // Truncated or malformed arguments: the tool's schema validation reports what is missing.
    return {};
  }
}

function newFallbackToolCallId(): string {
  return `call_${randomUUID().replaceAll("-", "").slice(0, 24)}`;
}

export class OutputBuilder {
  readonly message: AssistantMessage;
  private readonly texts = new Map<string, TextBlock>();
  private readonly thoughts = new Map<string, ThinkingBlock>();
  private readonly toolCalls = new Map<string, OpenToolCall>();
  private readonly progress: ProgressInfo = { textChars: 0, thinkingChars: 0, toolCalls: 0, partialText: "" };
  private usageReported = false;

  constructor(
    private readonly model: ModelInfo,
    private readonly options: CompleteOptions,
  ) {
    this.message = {
      role: "assistant",
      content: [],
      api: model.api,
      provider: model.provider,
      model: model.id,
      usage: emptyUsage(),
      stopReason: "stop",
      timestamp: Date.now(),
    };
  }

  /** Appends to the text block streamed under `key`, creating it on first use. */
  text(key: string, delta: string, signature?: string): void {
    let block = this.texts.get(key);
    if (!block) {
      block = { type: "text", text: "" };
      this.texts.set(key, block);
      this.message.content.push(block);
    }
    block.text += delta;
    if (signature) block.textSignature = signature;
    this.progress.textChars += delta.length;
    this.progress.partialText += delta;
    this.report();
    this.delta("text_delta", block, delta);
  }

  /** Appends to the thinking block streamed under `key`, creating it on first use. */
  thinking(key: string, delta: string): ThinkingBlock {
    let block = this.thoughts.get(key);
    if (!block) {
      block = { type: "thinking", thinking: "" };
      this.thoughts.set(key, block);
      this.message.content.push(block);
    }
    block.thinking += delta;
    this.progress.thinkingChars += delta.length;
    if (delta) this.report();
    this.delta("thinking_delta", block, delta);
    return block;
  }

  startToolCall(key: string, id: string, name: string): void {
    const block: ToolCallBlock = { type: "toolCall", id, name, arguments: {} };
    this.toolCalls.set(key, { block, json: "" });
    this.message.content.push(block);
    this.progress.toolCalls += 1;
    this.report();
  }

  /** The text block streamed under `key`, if any. */
  textBlock(key: string): TextBlock | undefined {
    return this.texts.get(key);
  }

  /** Replaces the streamed arguments with the final JSON the provider reports. */
  setToolArguments(key: string, json: string): void {
    const open = this.toolCalls.get(key);
    if (!open) return;
    open.json = json;
    open.block.arguments = parseArguments(json);
  }

  hasToolCall(key: string): boolean {
    return this.toolCalls.has(key);
  }

  toolArguments(key: string, delta: string): void {
    const open = this.toolCalls.get(key);
    if (!open) return;
    open.json += delta;
    open.block.arguments = parseArguments(open.json);
    this.delta("toolcall_delta", open.block, delta);
  }

  /** A complete block from a non-streaming response. */
  push(block: AssistantMessage["content"][number]): void {
    this.message.content.push(block);
    if (block.type === "toolCall") this.progress.toolCalls += 1;
  }

  /** Usage the server reported. */
  setUsage(tokens: TokenCounts): void {
    this.usageReported = true;
    this.message.usage = this.usageOf(tokens);
  }

  private usageOf(tokens: TokenCounts): AssistantMessage["usage"] {
    const totalTokens = tokens.input + tokens.output + tokens.cacheRead + tokens.cacheWrite;
    const counts = { ...tokens, totalTokens };
    return { ...counts, cost: computeCost(this.model, counts) };
  }

  /**
   * Usage for a response that reported none: estimated from the prompt and the answer, marked
   * `estimated`, so budgets and context checks do not see a free, empty call.
   */
  private estimateUsage(context: LlmContext): void {
    const prompt = estimateContextTokens(context.messages);
    const preamble =
      prompt.lastUsageIndex === null
        ? Math.ceil(
            ((context.systemPrompt?.length ?? 0) + JSON.stringify(context.tools ?? []).length) /
              CHARS_PER_TOKEN,
          )
        : 0;
    const tokens = {
      input: prompt.tokens + preamble,
      output: estimateTokens(this.message),
      cacheRead: 0,
      cacheWrite: 0,
    };
    this.message.usage = { ...this.usageOf(tokens), estimated: true };
  }

  setStopReason(reason: StopReason): void {
    this.message.stopReason = reason;
  }

  private report(): void {
    this.options.onProgress?.({ ...this.progress });
  }

  private delta(type: ContentDelta["type"], block: AssistantMessage["content"][number], delta: string): void {
    if (!delta || !this.options.onDelta) return;
    this.options.onDelta({ type, contentIndex: this.message.content.indexOf(block), delta });
  }

  /** Result of a call whose response completed. */
  finish(context: LlmContext): ProviderResult {
    if (this.message.stopReason === "error") {
      return this.failWith({ kind: "non_retryable", message: REFUSAL_MESSAGE });
    }
    if (!this.usageReported) this.estimateUsage(context);
    const usage = this.message.usage;
    const promptTokens = usage.input + usage.cacheRead + usage.cacheWrite;
    // An estimate says nothing about overflow: the server took the prompt.
    if (!usage.estimated && promptTokens > this.model.contextWindow) {
      return this.failWith({
        kind: "context_overflow",
        message: `Prompt used ${promptTokens} tokens; ${this.model.id} has a ${this.model.contextWindow}-token window`,
      });
    }
    this.addTextToolCalls(context);
    const hasToolCalls = this.message.content.some((block) => block.type === "toolCall");
    if (hasToolCalls && this.message.stopReason === "stop") this.message.stopReason = "toolUse";
    return { message: this.message };
  }

  /** Result of a call that threw; partial content is kept. */
  fail(error: unknown): ProviderResult {
    return this.failWith(classifyError(error, this.options.signal));
  }

  failWith(error: ProviderError): ProviderResult {
    this.message.stopReason = error.kind === "aborted" ? "aborted" : "error";
    this.message.errorMessage = error.message;
    return { message: this.message, error };
  }

  private addTextToolCalls(context: LlmContext): void {
    const offered = context.tools?.map((tool) => tool.name) ?? [];
    if (!this.model.textToolCalls || offered.length === 0) return;
    if (this.message.content.some((block) => block.type === "toolCall")) return;
    const text = this.message.content
      .filter((block): block is TextBlock => block.type === "text")
      .map((block) => block.text)
      .join("\n");
    for (const call of parseTextToolCalls(text, offered, newFallbackToolCallId)) this.push(call);
  }
}
