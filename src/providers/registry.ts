/**
 * Chooses the provider implementation for a model by its wire API and builds SDK clients from
 * configuration and the environment. Keys are passed to the SDKs only; they are never logged
 * or put into error messages.
 */
import type { LlmContext } from "../core/messages";
import { AnthropicProvider } from "./anthropic";
import { sdkBaseUrl } from "./model-spec";
import { OpenAiCompletionsProvider } from "./openai-completions";
import { OpenAiResponsesProvider } from "./openai-responses";
import { OutputBuilder } from "./output";
import type {
  AnthropicConnection,
  CompleteOptions,
  ModelApi,
  ModelInfo,
  Provider,
  ProviderConnection,
  ProviderResult,
} from "./types";

export interface ProviderConfig {
  /** Settings for both OpenAI APIs; unset fields come from `OPENAI_API_KEY` / `OPENAI_BASE_URL`. */
  openai?: Partial<ProviderConnection>;
  /** Unset fields come from `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL`. */
  anthropic?: Partial<AnthropicConnection>;
  /** Environment to read; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
}

type Family = "openai" | "anthropic";

/** Sent as the key to servers that need none (the SDKs refuse to start without one). */
const NO_KEY = "not-needed";

const FAMILY_OF_API: Record<ModelApi, Family> = {
  "openai-completions": "openai",
  "openai-responses": "openai",
  "anthropic-messages": "anthropic",
};

const ENV_NAMES: Record<Family, { key: string; baseURL: string }> = {
  openai: { key: "OPENAI_API_KEY", baseURL: "OPENAI_BASE_URL" },
  anthropic: { key: "ANTHROPIC_API_KEY", baseURL: "ANTHROPIC_BASE_URL" },
};

function instantiate(api: ModelApi, connection: AnthropicConnection): Provider {
  switch (api) {
    case "openai-completions":
      return new OpenAiCompletionsProvider(connection);
    case "openai-responses":
      return new OpenAiResponsesProvider(connection);
    case "anthropic-messages":
      return new AnthropicProvider(connection);
  }
}

/**
 * A provider that serves every model in the catalog: it dispatches on `model.api` and reuses
 * one SDK client per API and base URL. Base URLs are taken with or without `/v1` (see
 * `sdkBaseUrl`). The key is optional when a base URL is set (local servers); with neither, the
 * call comes back as a non-retryable error result.
 */
export function createProvider(config: ProviderConfig = {}): Provider {
  const env = config.env ?? process.env;
  const instances = new Map<string, Provider>();

  const connectionFor = (model: ModelInfo): AnthropicConnection | undefined => {
    const family = FAMILY_OF_API[model.api];
    const configured = config[family] ?? {};
    // Empty environment variables count as unset.
    const rawBaseURL = model.baseUrl || configured.baseURL || env[ENV_NAMES[family].baseURL];
    const baseURL = rawBaseURL ? sdkBaseUrl(model.api, rawBaseURL) : undefined;
    // A server of one's own often needs no key; the SDKs still insist on one.
    const apiKey = configured.apiKey || env[ENV_NAMES[family].key] || (baseURL ? NO_KEY : undefined);
    if (!apiKey) return undefined;
    return { ...configured, apiKey, ...(baseURL ? { baseURL } : {}) };
  };

  return {
    async complete(
      model: ModelInfo,
      context: LlmContext,
      options: CompleteOptions = {},
    ): Promise<ProviderResult> {
      const connection = connectionFor(model);
      if (!connection) {
        const family = FAMILY_OF_API[model.api];
        return new OutputBuilder(model, options).failWith({
          kind: "non_retryable",
          message:
            `No API key for ${model.id}: set ${ENV_NAMES[family].key}, or give a base URL ` +
            `(${ENV_NAMES[family].baseURL} or the model's baseUrl) for a server that needs no key`,
        });
      }
      const cacheKey = `${model.api} ${connection.baseURL ?? ""}`;
      let provider = instances.get(cacheKey);
      if (!provider) {
        provider = instantiate(model.api, connection);
        instances.set(cacheKey, provider);
      }
      return provider.complete(model, context, options);
    },
  };
}
