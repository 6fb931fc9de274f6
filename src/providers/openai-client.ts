/** One place that builds `openai` SDK clients and providers, so both OpenAI APIs share the same settings. */
import OpenAI from "openai";
import type { TokenCounts } from "./output";
import { SdkProvider } from "./sdk-provider";
import type { ProviderConnection } from "./types";

function createOpenAiClient(connection: ProviderConnection): OpenAI {
  return new OpenAI({
    apiKey: connection.apiKey,
    ...(connection.baseURL ? { baseURL: connection.baseURL } : {}),
    defaultHeaders: connection.headers,
    ...(connection.fetch ? { fetch: connection.fetch } : {}),
    // Retries belong to the durable caller (Temporal activities), not to the SDK.
    maxRetries: 0,
    ...(connection.timeoutMs !== undefined ? { timeout: connection.timeoutMs } : {}),
  });
}

/**
 * Token counts as both OpenAI APIs report them: their input count includes the tokens read from
 * the prompt cache (absent or null from some compatible servers: none), which Keel counts apart,
 * as they are priced apart; these APIs report no cache writes.
 */
export function openAiTokenCounts(
  input: number,
  output: number,
  cached: number | null | undefined,
): TokenCounts {
  const cacheRead = cached ?? 0;
  return { input: input - cacheRead, output, cacheRead, cacheWrite: 0 };
}

/** A provider speaking one of the OpenAI wire APIs through the SDK (see `SdkProvider`). */
export abstract class OpenAiSdkProvider<Params> extends SdkProvider<Params> {
  protected readonly client: OpenAI;

  constructor(connection: ProviderConnection) {
    super(connection);
    this.client = createOpenAiClient(connection);
  }
}
