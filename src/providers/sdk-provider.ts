/** What every provider built on a vendor SDK shares: a `complete` that never throws. */
import type { LlmContext } from "../core/messages";
import { OutputBuilder } from "./output";
import type { CompleteOptions, ModelInfo, Provider, ProviderResult } from "./types";

/**
 * A provider calling a vendor SDK. `complete` never throws: an error of the request, of the
 * stream or of the conversion becomes a failed result.
 */
export abstract class SdkProvider implements Provider {
  /** Stream the answer (default) or ask for it whole. */
  protected readonly stream: boolean;

  constructor(connection: { stream?: boolean }) {
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
