/**
 * The request path every SDK provider shares (src/providers/sdk-provider.ts): the body built once,
 * the whole answer or the stream, the caller's signal on the request, and how a call ends.
 */
import type { LlmContext } from "../../../src/core/messages";
import type { OutputBuilder } from "../../../src/providers/output";
import { SdkProvider, type SdkRequestOptions } from "../../../src/providers/sdk-provider";
import type { CompleteOptions, ModelInfo } from "../../../src/providers/types";

const MODEL: ModelInfo = {
  id: "fake",
  provider: "local",
  api: "openai-completions",
  contextWindow: 100_000,
  maxOutputTokens: 1000,
  reasoning: false,
  imageInput: false,
};
const CONTEXT: LlmContext = { messages: [{ role: "user", content: "hi", timestamp: 0 }] };

/** What the fake vendor call does: answer, throw, or stop short. */
interface Script {
  text?: string;
  throws?: Error;
  /** The stream's reason for ending short of a whole answer. */
  short?: string;
  /** Aborts the caller's signal while the stream is read. */
  abort?: AbortController;
}

class FakeProvider extends SdkProvider<{ model: string; maxTokens: number }> {
  readonly calls: { kind: "whole" | "streamed"; params: unknown; requestOptions: SdkRequestOptions }[] = [];

  constructor(
    stream: boolean | undefined,
    private readonly script: Script,
  ) {
    super(stream === undefined ? {} : { stream });
  }

  protected params(model: ModelInfo, _context: LlmContext, options: CompleteOptions) {
    return { model: model.id, maxTokens: options.maxTokens ?? model.maxOutputTokens };
  }

  protected async whole(out: OutputBuilder, params: unknown, requestOptions: SdkRequestOptions) {
    this.calls.push({ kind: "whole", params, requestOptions });
    if (this.script.throws) throw this.script.throws;
    out.text("content", this.script.text ?? "");
    out.setStopReason("stop");
  }

  protected async streamed(out: OutputBuilder, params: unknown, requestOptions: SdkRequestOptions) {
    this.calls.push({ kind: "streamed", params, requestOptions });
    out.text("content", this.script.text ?? "");
    this.script.abort?.abort();
    if (this.script.throws) throw this.script.throws;
    if (this.script.short !== undefined) return this.script.short;
    out.setStopReason("stop");
    return undefined;
  }
}

const textOf = (provider: FakeProvider, options?: CompleteOptions) =>
  provider.complete(MODEL, CONTEXT, options).then(({ message, error }) => ({
    text: message.content.map((block) => (block.type === "text" ? block.text : "")).join(""),
    stopReason: message.stopReason,
    error,
  }));

describe("SdkProvider.complete", () => {
  it("streams by default, with the body built once and the caller's signal on the request", async () => {
    const provider = new FakeProvider(undefined, { text: "hello" });
    const signal = new AbortController().signal;
    const result = await textOf(provider, { maxTokens: 7, signal });
    expect(result).toEqual({ text: "hello", stopReason: "stop", error: undefined });
    expect(provider.calls).toEqual([
      { kind: "streamed", params: { model: "fake", maxTokens: 7 }, requestOptions: { signal } },
    ]);
  });

  it("asks for the answer whole when the connection does not stream", async () => {
    const provider = new FakeProvider(false, { text: "whole" });
    expect(await textOf(provider)).toEqual({ text: "whole", stopReason: "stop", error: undefined });
    expect(provider.calls.map((call) => call.kind)).toEqual(["whole"]);
  });

  it("fails a stream that ends short with the provider's reason, keeping what came", async () => {
    const provider = new FakeProvider(true, { text: "part", short: "stream ended without a finish reason" });
    expect(await textOf(provider)).toEqual({
      text: "part",
      stopReason: "error",
      error: { kind: "retryable", message: "stream ended without a finish reason" },
    });
  });

  it("fails a stream the caller aborted as aborted, whatever else it reports", async () => {
    const abort = new AbortController();
    const provider = new FakeProvider(true, { text: "part", short: "cut", abort });
    const result = await textOf(provider, { signal: abort.signal });
    expect(result.stopReason).toBe("aborted");
    expect(result.error?.kind).toBe("aborted");
    expect(result.text).toBe("part");
  });

  it("never throws: an error of the call becomes a failed result", async () => {
    for (const stream of [true, false]) {
      const provider = new FakeProvider(stream, {
        throws: Object.assign(new Error("bad request"), { status: 400 }),
      });
      expect(await textOf(provider)).toMatchObject({
        stopReason: "error",
        error: { kind: "non_retryable", status: 400, message: "bad request" },
      });
    }
  });
});
