/**
 * Telemetry settings and model-call spans without a receiver: off unless the endpoint is set,
 * prompts and completions in spans only when the operator turns that on, GenAI attributes.
 */
import { context, trace } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import type { AssistantMessage } from "../../../src/core/messages";
import { emptyUsage } from "../../../src/core/usage";
import type { ModelInfo, Provider } from "../../../src/providers/types";
import { AsyncLocalContextManager } from "../../../src/telemetry/context-manager";
import { enableInstrumentation } from "../../../src/telemetry/instrumentation";
import { tracedProvider } from "../../../src/telemetry/model-calls";
import { type TelemetrySettings, telemetrySettingsFromEnv } from "../../../src/telemetry/settings";
import { temporalMetricsExporter } from "../../../src/worker/telemetry";

describe("telemetry settings", () => {
  test("off unless KEEL_OTEL_ENDPOINT is set; the standard OTLP variable alone does not turn it on", () => {
    expect(telemetrySettingsFromEnv("keel-worker", {})).toBeUndefined();
    expect(
      telemetrySettingsFromEnv("keel-worker", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }),
    ).toBeUndefined();
  });

  test("on with an http(s) URL; content capture only when set to true", () => {
    expect(telemetrySettingsFromEnv("keel-worker", { KEEL_OTEL_ENDPOINT: "http://127.0.0.1:4318/" })).toEqual(
      {
        endpoint: "http://127.0.0.1:4318",
        serviceName: "keel-worker",
        captureContent: false,
        metricsIntervalMs: 15_000,
        spanExportDelayMs: 1_000,
        metricsHeaders: {},
      },
    );
    const on = telemetrySettingsFromEnv("keel-api", {
      KEEL_OTEL_ENDPOINT: "https://otel.example",
      KEEL_OTEL_CAPTURE_CONTENT: "true",
      OTEL_SERVICE_NAME: "agents",
    });
    expect(on).toMatchObject({ captureContent: true, serviceName: "agents" });
  });

  test("a malformed endpoint or interval is refused at start", () => {
    expect(() => telemetrySettingsFromEnv("x", { KEEL_OTEL_ENDPOINT: "collector:4318" })).toThrow(/http/);
    expect(() => telemetrySettingsFromEnv("x", { KEEL_OTEL_ENDPOINT: "not a url" })).toThrow(/not a URL/);
    expect(() =>
      telemetrySettingsFromEnv("x", { KEEL_OTEL_ENDPOINT: "http://a", KEEL_OTEL_METRICS_INTERVAL_MS: "5" }),
    ).toThrow(/INTERVAL/);
    expect(() =>
      telemetrySettingsFromEnv("x", { KEEL_OTEL_ENDPOINT: "http://a", OTEL_BSP_SCHEDULE_DELAY: "soon" }),
    ).toThrow(/OTEL_BSP_SCHEDULE_DELAY/);
    expect(
      telemetrySettingsFromEnv("x", { KEEL_OTEL_ENDPOINT: "http://a", OTEL_BSP_SCHEDULE_DELAY: "60000" })
        ?.spanExportDelayMs,
    ).toBe(60_000);
  });

  test("the Temporal SDK's metrics go to the same receiver over OTLP/HTTP, with the standard headers", () => {
    const settings = telemetrySettingsFromEnv("keel-worker", {
      KEEL_OTEL_ENDPOINT: "https://otel.example/",
      KEEL_OTEL_METRICS_INTERVAL_MS: "500",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc,x-team=agents",
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: "x-team=metrics",
    }) as TelemetrySettings;
    expect(temporalMetricsExporter(settings)).toMatchObject({
      otel: {
        url: "https://otel.example/v1/metrics",
        http: true,
        metricsExportInterval: 500,
        headers: { authorization: "Bearer abc", "x-team": "metrics" },
      },
      globalTags: { "service.name": "keel-worker" },
    });
  });
});

describe("model-call spans", () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const model: ModelInfo = {
    id: "m-1",
    provider: "openai",
    api: "openai-completions",
    contextWindow: 1000,
    maxOutputTokens: 100,
    reasoning: false,
    imageInput: false,
  };
  const answer: AssistantMessage = {
    role: "assistant",
    content: [{ type: "text", text: "the secret answer" }],
    api: "openai-completions",
    provider: "openai",
    model: "m-1-2026",
    responseId: "resp-1",
    usage: { ...emptyUsage(), input: 10, cacheRead: 30, output: 5, totalTokens: 45 },
    stopReason: "toolUse",
    timestamp: 0,
  };
  const inner: Provider = { complete: async () => ({ message: answer }) };
  const llmContext = {
    systemPrompt: "be terse",
    messages: [{ role: "user" as const, content: "the secret question", timestamp: 0 }],
  };
  const settings = (captureContent: boolean): TelemetrySettings => ({
    endpoint: "http://unused",
    serviceName: "t",
    captureContent,
    metricsIntervalMs: 1000,
  });

  beforeAll(() => {
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalContextManager());
  });
  afterEach(() => {
    exporter.reset();
    enableInstrumentation(undefined);
  });
  afterAll(() => {
    trace.disable();
    context.disable();
  });

  test("off: the call passes through and no span is made", async () => {
    await tracedProvider(inner).complete(model, llmContext);
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });

  test("on: a chat span with the GenAI attributes and no prompt or completion text", async () => {
    enableInstrumentation(settings(false));
    await tracedProvider(inner).complete(model, llmContext);
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe("chat m-1");
    expect(span?.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "m-1",
      "gen_ai.response.model": "m-1-2026",
      "gen_ai.response.id": "resp-1",
      "gen_ai.response.finish_reasons": ["tool_calls"],
      "gen_ai.usage.input_tokens": 40,
      "gen_ai.usage.cache_read.input_tokens": 30,
      "gen_ai.usage.output_tokens": 5,
    });
    expect(JSON.stringify(span?.attributes)).not.toMatch(/secret|terse/);
  });

  test("content capture on: the prompt, system instructions and completion are on the span", async () => {
    enableInstrumentation(settings(true));
    await tracedProvider(inner).complete(model, llmContext);
    const [span] = exporter.getFinishedSpans();
    expect(span?.attributes["gen_ai.system_instructions"]).toBe("be terse");
    expect(span?.attributes["gen_ai.input.messages"]).toContain("the secret question");
    expect(span?.attributes["gen_ai.output.messages"]).toContain("the secret answer");
  });

  test("a provider error marks the span with its class", async () => {
    enableInstrumentation(settings(false));
    const failing: Provider = {
      complete: async () => ({
        message: { ...answer, stopReason: "error" },
        error: { kind: "retryable", status: 429, message: "slow down" },
      }),
    };
    await tracedProvider(failing).complete(model, llmContext);
    const [span] = exporter.getFinishedSpans();
    expect(span?.attributes).toMatchObject({ "error.type": "retryable", "http.response.status_code": 429 });
    expect(span?.status.code).toBe(2);
  });
});
