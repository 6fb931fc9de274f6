/**
 * The provider contract: one call turns an LLM context into one canonical assistant message.
 *
 * Providers never throw for provider-side failures (HTTP errors, network, timeouts, aborts):
 * those come back as a message with `stopReason` "error" or "aborted" plus a typed
 * classification, so the caller (a Temporal activity) decides whether to retry.
 */
import type { AssistantMessage, LlmContext } from "../core/messages";

/** Wire protocols Keel speaks. */
export type ModelApi = "openai-completions" | "openai-responses" | "anthropic-messages";

/** Prices in US dollars per million tokens. */
interface ModelPrices {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** One entry of the model catalog (`models.json` plus configured additions). */
export interface ModelInfo {
  id: string;
  /** Who serves it: "openai", "anthropic", "local", or any configured name. */
  provider: string;
  api: ModelApi;
  contextWindow: number;
  maxOutputTokens: number;
  /** Absent: unknown, so cost is not computed (the message's cost is marked `unpriced`). */
  prices?: ModelPrices;
  /** The model can think/reason; thinking options are sent only when true. */
  reasoning: boolean;
  imageInput: boolean;
  /** Overrides the provider's base URL for this model (OpenAI-compatible servers). */
  baseUrl?: string;
  /** Parse tool calls written as text when the model returns no structured ones. */
  textToolCalls?: boolean;
}

export type ThinkingLevel = "off" | "minimal" | "low" | "medium" | "high";

/** Progress of a streaming call, reported on every delta (heartbeats, live previews). */
export interface ProgressInfo {
  textChars: number;
  thinkingChars: number;
  toolCalls: number;
  partialText: string;
}

export interface CompleteOptions {
  maxTokens?: number;
  temperature?: number;
  thinkingLevel?: ThinkingLevel;
  signal?: AbortSignal;
  onProgress?: (progress: ProgressInfo) => void;
  /** Every non-empty delta as it arrives, with the index of the content block it extends. */
  onDelta?: (delta: ContentDelta) => void;
  /**
   * The caller has another model to go to: while the model's circuit breaker (at its endpoint) is
   * open the call is not sent (an error with `breaker: "open"`). Without it the call is always
   * sent (the breaker only learns from it): a run with one model keeps trying it.
   */
  canFailOver?: boolean;
}

/** Characters appended to one content block of the message being built. */
export interface ContentDelta {
  type: "text_delta" | "thinking_delta" | "toolcall_delta";
  contentIndex: number;
  delta: string;
}

type ProviderErrorKind = "retryable" | "non_retryable" | "context_overflow" | "aborted";

/** Why a call failed, in the terms a retry policy needs. */
export interface ProviderError {
  kind: ProviderErrorKind;
  /** HTTP status when the server answered. */
  status?: number;
  /** Server-requested delay before retrying (`retry-after-ms` / `retry-after`). */
  retryAfterMs?: number;
  message: string;
  /**
   * The model's circuit breaker at its endpoint (providers/circuit-breaker.ts) is open: `open` when
   * the call was not sent for that reason, `opened` when this failure opened it or found it open.
   */
  breaker?: "open" | "opened";
}

/**
 * The outcome of one call. `message` is always a canonical assistant message (partial content
 * is kept on abort and mid-stream errors); `error` is present exactly when
 * `message.stopReason` is "error" or "aborted".
 */
export interface ProviderResult {
  message: AssistantMessage;
  error?: ProviderError;
}

export interface Provider {
  /** Never throws for provider errors; see {@link ProviderResult}. */
  complete(model: ModelInfo, context: LlmContext, options?: CompleteOptions): Promise<ProviderResult>;
}

/** Connection settings shared by every provider implementation. */
export interface ProviderConnection {
  /** Optional for servers that need none (a placeholder is sent: the SDKs require a value). */
  apiKey: string;
  baseURL?: string;
  headers?: Record<string, string>;
  /** Per-request timeout of the SDK client, in milliseconds. */
  timeoutMs?: number;
  /** Use the non-streaming endpoint form (for servers without SSE support). */
  stream?: boolean;
  /** The `fetch` the SDK sends requests with (the registry's enforces the egress policy). */
  fetch?: typeof fetch;
}

export interface AnthropicConnection extends ProviderConnection {
  /** Put `cache_control` on the system prompt, the last tool and the last user block (default true). */
  promptCaching?: boolean;
}
