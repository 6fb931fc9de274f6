/**
 * Telemetry settings. Off unless `KEEL_OTEL_ENDPOINT` names an OTLP/HTTP receiver (the base URL:
 * traces go to `<endpoint>/v1/traces`, metrics to `<endpoint>/v1/metrics`). Keel's own variable,
 * not the standard `OTEL_EXPORTER_OTLP_ENDPOINT`: a process that inherits the standard one from
 * its platform (a sidecar, an agent's environment) does not start exporting run data unasked.
 * Prompt and completion text go into spans only with `KEEL_OTEL_CAPTURE_CONTENT=true`: they are
 * the tenant's data, and a trace store usually has wider access than the session store.
 */
import { baggageUtils } from "@opentelemetry/core";
import { z } from "zod";
import type { SettingsShape } from "../core/env-settings";

/** The telemetry variables, as fields of a process's settings schema (checked by telemetrySettingsFromEnv). */
export const TELEMETRY_ENV = {
  KEEL_OTEL_ENDPOINT: z
    .string()
    .optional()
    .describe(
      "An OTLP/HTTP receiver's base URL (traces to <endpoint>/v1/traces, metrics to /v1/metrics); unset: no telemetry.",
    ),
  KEEL_OTEL_CAPTURE_CONTENT: z
    .enum(["true", "false"])
    .optional()
    .describe("true: prompts and completions go into model-call spans (the tenant's data; off by default)."),
  KEEL_OTEL_METRICS_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .optional()
    .describe("How often metrics are exported, in milliseconds (at least 100; default 15000)."),
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .optional()
    .describe(
      "Headers (secret; key=value, comma-separated) of every OTLP export, e.g. the receiver's credentials.",
    ),
  OTEL_EXPORTER_OTLP_METRICS_HEADERS: z
    .string()
    .optional()
    .describe("Headers (secret) of metric exports only, beside OTEL_EXPORTER_OTLP_HEADERS."),
  OTEL_SERVICE_NAME: z.string().optional().describe("The service.name of this process's spans and metrics."),
  OTEL_BSP_SCHEDULE_DELAY: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Longest a finished span waits before it is exported, in milliseconds (default 1000)."),
} satisfies SettingsShape;

export interface TelemetrySettings {
  /** The OTLP/HTTP base URL, without a trailing slash. */
  endpoint: string;
  /** `service.name` of this process's spans and metrics (`OTEL_SERVICE_NAME` overrides). */
  serviceName: string;
  /**
   * Headers of metric exports (`OTEL_EXPORTER_OTLP_HEADERS`, then `OTEL_EXPORTER_OTLP_METRICS_HEADERS`):
   * for the Temporal core's exporter, which does not read them itself.
   */
  metricsHeaders?: Record<string, string>;
  /** Put prompts and completions on model-call spans. */
  captureContent: boolean;
  /** How often metrics are exported, in milliseconds (`KEEL_OTEL_METRICS_INTERVAL_MS`, default 15 s). */
  metricsIntervalMs: number;
  /**
   * Longest a finished span waits in the batch before it is exported, in milliseconds (the
   * standard `OTEL_BSP_SCHEDULE_DELAY`; default 1 s).
   */
  spanExportDelayMs?: number;
}

const DEFAULT_METRICS_INTERVAL_MS = 15_000;
export const DEFAULT_SPAN_EXPORT_DELAY_MS = 1_000;

/** The settings from the environment, or undefined when telemetry is off (no endpoint set). */
export function telemetrySettingsFromEnv(
  defaultServiceName: string,
  env: NodeJS.ProcessEnv,
): TelemetrySettings | undefined {
  const endpoint = env.KEEL_OTEL_ENDPOINT?.trim();
  if (!endpoint) return undefined;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new Error(`KEEL_OTEL_ENDPOINT is not a URL: ${endpoint}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new Error(`KEEL_OTEL_ENDPOINT must be an http(s) URL (OTLP over HTTP): ${endpoint}`);
  const interval = Number(env.KEEL_OTEL_METRICS_INTERVAL_MS ?? DEFAULT_METRICS_INTERVAL_MS);
  if (!Number.isInteger(interval) || interval < 100)
    throw new Error("KEEL_OTEL_METRICS_INTERVAL_MS must be an integer of at least 100");
  const spanDelay = Number(env.OTEL_BSP_SCHEDULE_DELAY ?? DEFAULT_SPAN_EXPORT_DELAY_MS);
  if (!Number.isInteger(spanDelay) || spanDelay < 0)
    throw new Error("OTEL_BSP_SCHEDULE_DELAY must be a non-negative integer (milliseconds)");
  return {
    endpoint: endpoint.replace(/\/+$/, ""),
    serviceName: env.OTEL_SERVICE_NAME?.trim() || defaultServiceName,
    metricsHeaders: {
      ...baggageUtils.parseKeyPairsIntoRecord(env.OTEL_EXPORTER_OTLP_HEADERS),
      ...baggageUtils.parseKeyPairsIntoRecord(env.OTEL_EXPORTER_OTLP_METRICS_HEADERS),
    },
    captureContent: env.KEEL_OTEL_CAPTURE_CONTENT === "true",
    metricsIntervalMs: interval,
    spanExportDelayMs: spanDelay,
  };
}
