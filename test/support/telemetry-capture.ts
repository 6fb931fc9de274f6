/**
 * Keel's spans and metrics kept in memory, for tests of code that runs in the test process (the
 * API of an integration stage, a unit under test): the providers are registered as the process's
 * global ones, and the tests turn Keel's instrumentation on with `enableInstrumentation`.
 */
import { type Attributes, metrics, trace } from "@opentelemetry/api";
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import type { TelemetrySettings } from "../../src/telemetry/settings";

/** Settings that turn the instrumentation on; nothing is exported anywhere. */
export const CAPTURED_TELEMETRY: TelemetrySettings = {
  endpoint: "http://unused",
  serviceName: "keel-test",
  captureContent: false,
  metricsIntervalMs: 60_000,
};

export function captureTelemetry() {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // Read on demand (`forceFlush`), never on its own interval.
  const reader = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 3_600_000,
  });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    spans,
    /** Registers the providers as the process's global ones. */
    install(): void {
      trace.setGlobalTracerProvider(tracerProvider);
      metrics.setGlobalMeterProvider(meterProvider);
    },
    /** Unregisters them and stops their exports. */
    async uninstall(): Promise<void> {
      trace.disable();
      metrics.disable();
      await meterProvider.shutdown();
    },
    /** The attributes of each `keel.tool.duration` series recorded so far. */
    async toolDurations(): Promise<Attributes[]> {
      await reader.forceFlush();
      return metricExporter
        .getMetrics()
        .flatMap((batch) => batch.scopeMetrics.flatMap((scope) => scope.metrics))
        .filter((metric) => metric.descriptor.name === "keel.tool.duration")
        .flatMap((metric) => metric.dataPoints.map((point) => point.attributes));
    },
  };
}
