/**
 * Chooses the provider implementation for a model by its wire API and builds SDK clients from
 * configuration and the environment. Keys are passed to the SDKs only; they are never logged
 * or put into error messages, and go only where `ModelUrlPolicy` sends them.
 */

import { BoundedCache } from "../core/bounded-cache";
import type { LlmContext } from "../core/messages";
import { guardedFetch } from "../net/guarded-fetch";
import { AnthropicProvider } from "./anthropic";
import { type BreakerSettings, breakerKeyOf, CircuitBreakers } from "./circuit-breaker";
import { breakerOutcomeOf } from "./errors";
import { sdkBaseUrl } from "./model-spec";
import {
  configuredBaseUrls,
  FAMILY_OF_API,
  FAMILY_SETTINGS,
  MODEL_URLS_SETTING,
  type ModelUrlEntry,
  ModelUrlPolicy,
  parseModelUrls,
} from "./model-urls";
import { loadCatalog, type ModelCatalog } from "./models";
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
  /**
   * The variables keys and base URLs are read from (the process's environment, passed down from
   * its entry point): the OPENAI_ and ANTHROPIC_ keys and base URLs, and the key variables KEEL_MODEL_URLS names. Default:
   * none.
   */
  env?: NodeJS.ProcessEnv;
  /** Extra base URLs one-line models may name (KEEL_MODEL_URLS); default: parsed from `env`. */
  modelUrls?: readonly ModelUrlEntry[];
  /** The operator's catalog, whose base URLs get the family's key; default: the built-in models. */
  catalog?: ModelCatalog;
  /** When a provider endpoint's circuit breaker opens and for how long (circuit-breaker.ts). */
  breaker?: BreakerSettings;
}

/** SDK clients kept at once; another is built again when needed (cheap: no connection is held open). */
const MAX_CLIENTS = 64;

/** Sent as the key to servers that need none (the SDKs refuse to start without one). */
const NO_KEY = "not-needed";

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
 * `sdkBaseUrl`). Where a request may go and which key it carries is `ModelUrlPolicy`'s decision
 * (model-urls.ts); every connection obeys the egress policy (net/egress-policy.ts). The key is
 * optional when a base URL is set (local servers); with neither, or for a base URL the policy
 * refuses, the call comes back as a non-retryable error result without any request.
 */
export function createProvider(config: ProviderConfig = {}): Provider {
  const env = config.env ?? {};
  const catalog = config.catalog ?? loadCatalog();
  const configuredUrls = configuredBaseUrls(env);
  for (const family of ["openai", "anthropic"] as const) {
    const baseURL = config[family]?.baseURL;
    if (baseURL) configuredUrls[family] = baseURL;
  }
  const policy = new ModelUrlPolicy({
    allowlist: config.modelUrls ?? parseModelUrls(env[MODEL_URLS_SETTING]),
    configured: configuredUrls,
    catalog: () => catalog.list(),
  });
  const fetch = guardedFetch(policy.allowsHost);
  // One SDK client per API, base URL and key; bounded, as an allowlisted URL prefix covers many URLs.
  const instances = new BoundedCache<string, Provider>({ capacity: MAX_CLIENTS });
  // One breaker per model at an endpoint (API, base URL and model id), whatever key reaches it.
  const breakers = new CircuitBreakers(config.breaker);

  /** The connection for `model`, or why there is none. */
  const connectionFor = (model: ModelInfo): AnthropicConnection | string => {
    const family = FAMILY_OF_API[model.api];
    const names = FAMILY_SETTINGS[family];
    const route = policy.route(model);
    if (route.kind === "refused") return route.message;
    const configured = config[family] ?? {};
    // Empty environment variables count as unset.
    const rawBaseURL = model.baseUrl || configured.baseURL || env[names.baseURL];
    const baseURL = rawBaseURL ? sdkBaseUrl(model.api, rawBaseURL) : undefined;
    let apiKey: string | undefined;
    if (route.kind === "operator") apiKey = configured.apiKey || env[names.key];
    else if (route.keyVariable) {
      apiKey = env[route.keyVariable];
      if (!apiKey)
        return `${MODEL_URLS_SETTING} names ${route.keyVariable} as the key of ${model.baseUrl}, but it is not set`;
    }
    // A server of one's own often needs no key; the SDKs still insist on one.
    apiKey ||= baseURL ? NO_KEY : undefined;
    if (!apiKey)
      return (
        `No API key for ${model.id}: set ${names.key}, or give a base URL ` +
        `(${names.baseURL} or the model's baseUrl) for a server that needs no key`
      );
    return { ...configured, apiKey, fetch, ...(baseURL ? { baseURL } : {}) };
  };

  return {
    async complete(
      model: ModelInfo,
      context: LlmContext,
      options: CompleteOptions = {},
    ): Promise<ProviderResult> {
      const connection = connectionFor(model);
      if (typeof connection === "string")
        return new OutputBuilder(model, options).failWith({ kind: "non_retryable", message: connection });
      // The key is part of the client: the same URL may be reached with a listed entry's key.
      const cacheKey = `${model.api} ${connection.baseURL ?? ""} ${connection.apiKey}`;
      let provider = instances.get(cacheKey);
      if (!provider) {
        provider = instantiate(model.api, connection);
        instances.set(cacheKey, provider);
      }
      const endpoint = breakerKeyOf(model.api, connection.baseURL, model.id);
      // A run with nowhere else to go still sends its call (the breaker only learns from it).
      if (!breakers.admit(endpoint) && options.canFailOver) {
        return new OutputBuilder(model, options).failWith({
          kind: "retryable",
          breaker: "open",
          message: `not sent: the circuit breaker of ${model.api} at ${connection.baseURL ?? "its default URL"} is open for ${model.id} after repeated failures`,
        });
      }
      const result = await provider.complete(model, context, options);
      breakers.record(endpoint, breakerOutcomeOf(result.error));
      if (result.error?.kind === "retryable" && breakers.state(endpoint) !== "closed")
        return { ...result, error: { ...result.error, breaker: "opened" } };
      return result;
    },
  };
}
