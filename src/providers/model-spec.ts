/**
 * Models named in one line, without a catalog entry:
 *
 * ```
 * openai-compatible:<model>[@<base URL>]      Chat Completions (vLLM, Ollama, LiteLLM, OpenRouter, …)
 * openai-responses:<model>[@<base URL>]       OpenAI Responses API
 * anthropic-compatible:<model>[@<base URL>]   Anthropic Messages API
 * ```
 *
 * The model name is sent as is (it may hold `:` and `/`, e.g. `qwen3-coder:30b`,
 * `openai/gpt-4.1`). Without a base URL the provider's configured one is used. Context window and
 * output limit get conservative defaults; a base URL must not carry credentials (user info or a
 * query string: the spec is stored and shown; keys go in the environment); prices are unknown, so cost is not computed (the
 * message's cost is marked `unpriced`). A catalog entry (KEEL_MODELS_FILE) sets all of it.
 */
import type { ModelApi, ModelInfo } from "./types";

/** Defaults for a model named in one line; small enough for most local servers' settings. */
export const ONE_LINE_DEFAULTS = { contextWindow: 32_768, maxOutputTokens: 4_096 } as const;

const KINDS: Record<string, ModelApi> = {
  "openai-compatible": "openai-completions",
  "openai-responses": "openai-responses",
  "anthropic-compatible": "anthropic-messages",
};

export const MODEL_SPEC_KINDS = Object.keys(KINDS);

/** The wire API of each one-line kind. */
export const MODEL_SPEC_APIS: Readonly<Record<string, ModelApi>> = KINDS;

const SPEC = /^([a-z-]+):([^\s@]+(?:@(?![a-z][a-z0-9+.-]*:\/\/)[^\s@]+)*)(?:@(https?:\/\/\S+))?$/;

/** The model a one-line spec names, or undefined when `spec` is not one. */
export function modelFromSpec(spec: string): ModelInfo | undefined {
  const match = SPEC.exec(spec);
  const api = match ? KINDS[match[1]!] : undefined;
  if (!match || !api) return undefined;
  const baseUrl = match[3];
  // The spec travels in run settings, search attributes and logs: no credentials in it.
  if (baseUrl !== undefined && (!URL.canParse(baseUrl) || hasCredentials(new URL(baseUrl)))) return undefined;
  return {
    id: match[2]!,
    provider: match[1]!,
    api,
    ...ONE_LINE_DEFAULTS,
    reasoning: false,
    imageInput: false,
    ...(baseUrl ? { baseUrl } : {}),
  };
}

function hasCredentials(url: URL): boolean {
  return url.username !== "" || url.password !== "" || url.search !== "";
}

/**
 * The base URL the SDK expects: the `openai` SDK wants the `/v1` folder (added when the URL has
 * no path), `@anthropic-ai/sdk` adds `/v1/messages` itself (a trailing `/v1` is removed).
 */
export function sdkBaseUrl(api: ModelApi, baseUrl: string): string {
  const url = new URL(baseUrl);
  const path = url.pathname.replace(/\/+$/, "");
  if (api === "anthropic-messages") url.pathname = path.replace(/\/v1$/, "") || "/";
  else url.pathname = path === "" ? "/v1" : path;
  return url.toString().replace(/\/$/, "");
}
