/**
 * Model calls as spans with the OpenTelemetry GenAI semantic conventions, and the model metrics
 * (tokens and cost by tenant and model, call duration, errors by class). A decorator over the
 * provider, installed only when telemetry is on: when it is off the provider is not wrapped.
 */
import { type Attributes, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { AssistantMessage, LlmContext } from "../core/messages";
import type { CompleteOptions, ModelInfo, Provider, ProviderResult } from "../providers/types";
import { activeRunScope, instrumentation, keelInstruments, keelTracer } from "./instrumentation";

/** `gen_ai.response.finish_reasons` values for Keel's stop reasons. */
const FINISH_REASONS: Record<AssistantMessage["stopReason"], string> = {
  stop: "stop",
  length: "length",
  toolUse: "tool_calls",
  error: "error",
  aborted: "cancelled",
};

/** `provider` with a span and metrics around every call; see the module comment. */
export function tracedProvider(provider: Provider): Provider {
  return {
    complete(model: ModelInfo, llmContext: LlmContext, options?: CompleteOptions): Promise<ProviderResult> {
      const settings = instrumentation();
      if (!settings) return provider.complete(model, llmContext, options);
      const scope = activeRunScope();
      const attributes: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": model.provider,
        "gen_ai.system": model.provider,
        "gen_ai.request.model": model.id,
        "keel.model.api": model.api,
        ...(options?.thinkingLevel ? { "keel.thinking_level": options.thinkingLevel } : {}),
        ...(scope ? { "keel.tenant_id": scope.tenantId, "keel.session_id": scope.sessionId } : {}),
      };
      if (settings.captureContent) {
        if (llmContext.systemPrompt) attributes["gen_ai.system_instructions"] = llmContext.systemPrompt;
        attributes["gen_ai.input.messages"] = JSON.stringify(llmContext.messages);
      }
      const started = performance.now();
      return keelTracer().startActiveSpan(
        `chat ${model.id}`,
        { kind: SpanKind.CLIENT, attributes },
        async (span) => {
          try {
            const result = await provider.complete(model, llmContext, options);
            const { message, error } = result;
            span.setAttributes(responseAttributes(message));
            if (settings.captureContent)
              span.setAttribute("gen_ai.output.messages", JSON.stringify([message]));
            if (error) {
              span.setAttribute("error.type", error.kind);
              if (error.status !== undefined) span.setAttribute("http.response.status_code", error.status);
              span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
            }
            recordModelMetrics(model, message, error?.kind, (performance.now() - started) / 1000);
            return result;
          } catch (thrown) {
            span.recordException(thrown as Error);
            span.setStatus({ code: SpanStatusCode.ERROR });
            recordModelMetrics(model, undefined, "exception", (performance.now() - started) / 1000);
            throw thrown;
          } finally {
            span.end();
          }
        },
      );
    },
  };
}

function responseAttributes(message: AssistantMessage): Attributes {
  const { usage } = message;
  return {
    "gen_ai.response.model": message.model,
    ...(message.responseId ? { "gen_ai.response.id": message.responseId } : {}),
    "gen_ai.response.finish_reasons": [FINISH_REASONS[message.stopReason]],
    "gen_ai.usage.input_tokens": usage.input + usage.cacheRead + usage.cacheWrite,
    "gen_ai.usage.output_tokens": usage.output,
    "gen_ai.usage.cache_read.input_tokens": usage.cacheRead,
    "gen_ai.usage.cache_creation.input_tokens": usage.cacheWrite,
    ...(usage.cost.unpriced ? {} : { "keel.cost.usd": usage.cost.total }),
  };
}

function recordModelMetrics(
  model: ModelInfo,
  message: AssistantMessage | undefined,
  errorClass: string | undefined,
  seconds: number,
): void {
  const instruments = keelInstruments();
  const scope = activeRunScope();
  const base = {
    "gen_ai.provider.name": model.provider,
    "gen_ai.request.model": model.id,
    ...(scope ? { "keel.tenant_id": scope.tenantId } : {}),
  };
  instruments.modelDuration.record(seconds, {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": model.provider,
    "gen_ai.request.model": model.id,
    ...(errorClass ? { "error.type": errorClass } : {}),
  });
  if (errorClass) instruments.modelErrors.add(1, { ...base, "error.type": errorClass });
  if (!message) return;
  const { usage } = message;
  for (const [type, tokens] of [
    ["input", usage.input],
    ["output", usage.output],
    ["cache_read", usage.cacheRead],
    ["cache_write", usage.cacheWrite],
  ] as const) {
    if (tokens > 0) instruments.tokens.add(tokens, { ...base, "gen_ai.token.type": type });
  }
  if (!usage.cost.unpriced && usage.cost.total > 0) instruments.cost.add(usage.cost.total, base);
}
