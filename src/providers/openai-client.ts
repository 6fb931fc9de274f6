/** One place that builds `openai` SDK clients and providers, so both OpenAI APIs share the same settings. */
import OpenAI from "openai";
import type { LlmContext } from "../core/messages";
import { OutputBuilder } from "./output";
import type { CompleteOptions, ModelInfo, Provider, ProviderConnection, ProviderResult } from "./types";
export function createOpenAiClient(connection: ProviderConnection): OpenAI {
  return new OpenAI({
    apiKey: connection.apiKey,
    ...(connection.baseURL ? { baseURL: connection.baseURL } : {}),
    defaultHeaders: connection.headers,
    // Retries belong to the durable caller (Temporal activities), not to the SDK.
    maxRetries: 0,
    ...(connection.timeoutMs !== undefined ? { timeout: connection.timeoutMs } : {}),
  });
}

/**
 * A provider speaking one of the OpenAI wire APIs through the SDK. `complete` never throws: an
 * error of the request, of the stream or of the conversion becomes a failed result.
 */
export abstract class OpenAiSdkProvider implements Provider {
  protected readonly client: OpenAI;
  /** Stream the answer (default) or ask for it whole. */
  protected readonly stream: boolean;

  constructor(connection: ProviderConnection) {
    this.client = createOpenAiClient(connection);
    this.stream = connection.stream ?? true;
  }

  async complete(
    model: ModelInfo,
    context: LlmContext,
    options: CompleteOptions = {},
  ): Promise<ProviderResult> {
    const out = new OutputBuilder(model, options);
    try {
      return await this.request(out, model, context, options);
    } catch (error) {
      return out.fail(error);
    }
  }

  /** Sends the request and feeds the answer into `out`; may throw. */
  protected abstract request(
    out: OutputBuilder,
    model: ModelInfo,
    context: LlmContext,
    options: CompleteOptions,
  ): Promise<ProviderResult>;
}
