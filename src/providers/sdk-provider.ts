/**
 * What every provider built on a vendor SDK shares: a `complete` that never throws, and the one
 * request path around the vendor's call — the body built once, the whole answer or the stream
 * (the connection's `stream`), the caller's abort signal on the request, and how a stream that
 * stops short ends.
 */
import type { LlmContext } from "../core/messages";
import { OutputBuilder } from "./output";
import type { CompleteOptions, ModelInfo, Provider, ProviderResult } from "./types";

/** The per-request options every vendor SDK call gets: the caller's abort signal. */
export interface SdkRequestOptions {
  signal?: AbortSignal;
}

/**
 * A provider calling a vendor SDK with request bodies of type `Params`. `complete` never throws:
 * an error of the request, of the stream or of the conversion becomes a failed result. A stream
 * the caller aborted fails as `aborted` whatever it reports; one that ends short of a whole
 * answer fails with the provider's reason; a whole answer (or a complete stream) is finished.
 */
export abstract class SdkProvider<Params> implements Provider {
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
      const params = this.params(model, context, options);
      const requestOptions: SdkRequestOptions = { signal: options.signal };
      if (!this.stream) {
        await this.whole(out, params, requestOptions);
        return out.finish(context);
      }
      const short = await this.streamed(out, params, requestOptions);
      if (options.signal?.aborted) return out.fail(new Error("aborted"));
      if (short !== undefined) return out.fail(new Error(short));
      return out.finish(context);
    } catch (error) {
      return out.fail(error);
    }
  }

  /** The request's body for this model, context and options; may throw. */
  protected abstract params(model: ModelInfo, context: LlmContext, options: CompleteOptions): Params;

  /** Asks for the answer whole and feeds it into `out`; may throw. */
  protected abstract whole(
    out: OutputBuilder,
    params: Params,
    requestOptions: SdkRequestOptions,
  ): Promise<void>;

  /**
   * Streams the answer into `out`. Resolves to why the stream ended short of a whole answer (the
   * failure's message), or undefined when it ended as it should; may throw.
   */
  protected abstract streamed(
    out: OutputBuilder,
    params: Params,
    requestOptions: SdkRequestOptions,
  ): Promise<string | undefined>;
}
