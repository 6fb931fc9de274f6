/**
 * Starts OpenTelemetry for one process (the API or a worker) when telemetry is on: a tracer
 * provider exporting spans in batches over OTLP/HTTP, W3C trace-context propagation, a context
 * manager that follows `await`, and a meter provider exporting metrics periodically. Everything is
 * registered as the process's global OpenTelemetry API, which the instrumentation reads.
 */
import { hostname } from "node:os";
import { context, metrics, propagation, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { Resource } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { AsyncLocalContextManager } from "./context-manager";
import { enableInstrumentation } from "./instrumentation";
import { DEFAULT_SPAN_EXPORT_DELAY_MS, type TelemetrySettings } from "./settings";

/** A started telemetry pipeline. */
export interface Telemetry {
  settings: TelemetrySettings;
  resource: Resource;
  /** The processor workflow spans (made in the workflow sandbox) are handed to. */
  spanProcessor: SpanProcessor;
  /** Exports what is buffered (spans and metrics); resolves when the receiver took it or failed. */
  flush(): Promise<void>;
  /** Flushes, then stops exporting and unregisters the global providers. */
  shutdown(): Promise<void>;
}

/** Registers the global tracer, meter, propagator and context manager; see the module comment. */
export function startTelemetry(settings: TelemetrySettings): Telemetry {
  const resource = new Resource({
    "service.name": settings.serviceName,
    "service.instance.id": `${hostname()}:${process.pid}`,
  });
  const spanProcessor = new BatchSpanProcessor(
    new OTLPTraceExporter({ url: `${settings.endpoint}/v1/traces` }),
    { scheduledDelayMillis: settings.spanExportDelayMs ?? DEFAULT_SPAN_EXPORT_DELAY_MS },
  );
  const tracerProvider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  const contextManager = new AsyncLocalContextManager();
  tracerProvider.register({ contextManager, propagator: new W3CTraceContextPropagator() });
  const meterProvider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: `${settings.endpoint}/v1/metrics` }),
        exportIntervalMillis: settings.metricsIntervalMs,
        exportTimeoutMillis: Math.min(settings.metricsIntervalMs, 10_000),
      }),
    ],
  });
  metrics.setGlobalMeterProvider(meterProvider);
  enableInstrumentation(settings);
  return {
    settings,
    resource,
    spanProcessor,
    async flush() {
      await Promise.allSettled([tracerProvider.forceFlush(), meterProvider.forceFlush()]);
    },
    async shutdown() {
      await Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
      trace.disable();
      metrics.disable();
      propagation.disable();
      context.disable();
      enableInstrumentation(undefined);
    },
  };
}
