/**
 * The switch Keel's own instrumentation reads: set once by `startTelemetry`, unset by its
 * shutdown. Code on a hot path asks `instrumentation()` first and does nothing more when it is
 * undefined, so telemetry that is off costs one variable read.
 */
import { type Context, context, createContextKey, metrics, trace } from "@opentelemetry/api";
import type { TelemetrySettings } from "./settings";

let current: TelemetrySettings | undefined;

/** Turns Keel's instrumentation on (with the settings) or off (undefined). */
export function enableInstrumentation(settings: TelemetrySettings | undefined): void {
  current = settings;
  instruments = undefined;
}

/** The settings while telemetry is on; undefined when it is off. */
export function instrumentation(): TelemetrySettings | undefined {
  return current;
}

const INSTRUMENTATION_SCOPE = "keel";

export function keelTracer() {
  return trace.getTracer(INSTRUMENTATION_SCOPE);
}

/** The tenant and session an activity works for, carried in the context to the spans below it. */
export interface RunScope {
  tenantId: string;
  sessionId: string;
}

const RUN_SCOPE = createContextKey("keel.run-scope");

export function withRunScope(parent: Context, scope: RunScope): Context {
  return parent.setValue(RUN_SCOPE, scope);
}

export function activeRunScope(): RunScope | undefined {
  return context.active().getValue(RUN_SCOPE) as RunScope | undefined;
}

/** Keel's metric instruments (names in docs/architecture.md's telemetry section). */
function createInstruments() {
  const meter = metrics.getMeter(INSTRUMENTATION_SCOPE);
  return {
    tokens: meter.createCounter("keel.model.tokens", {
      description: "Model tokens by tenant, model and type (input, output, cache_read, cache_write)",
      unit: "{token}",
    }),
    cost: meter.createCounter("keel.model.cost", {
      description: "Model cost by tenant and model, from the catalog's prices",
      unit: "USD",
    }),
    modelDuration: meter.createHistogram("gen_ai.client.operation.duration", {
      description: "Duration of model calls",
      unit: "s",
    }),
    modelErrors: meter.createCounter("keel.model.errors", {
      description: "Failed model calls by class (retryable, non_retryable, context_overflow, aborted)",
      unit: "{call}",
    }),
    turnDuration: meter.createHistogram("keel.turn.duration", {
      description: "Duration of llmTurn activities (store reads and writes included)",
      unit: "s",
    }),
    toolDuration: meter.createHistogram("keel.tool.duration", {
      description: "Duration of tool calls by tool and outcome",
      unit: "s",
    }),
    queueWait: meter.createHistogram("keel.activity.schedule_to_start", {
      description: "Time an activity attempt waited in its task queue before a worker started it",
      unit: "s",
    }),
    runs: meter.createCounter("keel.runs", {
      description: "Finished runs by outcome",
      unit: "{run}",
    }),
  };
}

let instruments: ReturnType<typeof createInstruments> | undefined;

/** The instruments, created on first use after telemetry was turned on. */
export function keelInstruments(): ReturnType<typeof createInstruments> {
  instruments ??= createInstruments();
  return instruments;
}
