/**
 * A worker's telemetry: Temporal's OpenTelemetry interceptors (workflow, activity and the
 * worker's own client) plus Keel's activity interceptor, and the sinks that take workflow spans
 * and run outcomes out of the workflow sandbox. Everything here is installed only when telemetry
 * is on.
 *
 * Keel's activity interceptor runs inside Temporal's activity span and adds what shows a retry or
 * a takeover for what it is: the attempt number (a takeover after a worker died is the next
 * attempt, run by another process: its `service.instance.id` differs), the queue the attempt came
 * from and how long it waited there. Tool calls get a span of their own with tool name, replay class and
 * outcome, made by the tool-call lifecycle (src/tool-calls/lifecycle.ts) as the API makes a runner's.
 */
import { type Attributes, context, trace } from "@opentelemetry/api";
import type { Context as ActivityContext } from "@temporalio/activity";
// The package's entries, not its root: the root also loads the worker plugin, whose
// require.resolve of the workflow interceptors cannot be bundled into a Lambda function.
import { OpenTelemetryWorkflowClientInterceptor } from "@temporalio/interceptors-opentelemetry/lib/client";
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from "@temporalio/interceptors-opentelemetry/lib/worker";
import type { OpenTelemetrySinks } from "@temporalio/interceptors-opentelemetry/lib/workflow/definitions";
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  InjectedSinks,
  MetricsExporterConfig,
  Next,
  WorkerInterceptors,
} from "@temporalio/worker";
import type { ExecuteToolInput, ExecuteToolResult, LlmTurnInput } from "../contracts/activities";
import { instrumentation, keelInstruments, withRunScope } from "../telemetry/instrumentation";
import type { Telemetry } from "../telemetry/sdk";
import type { TelemetrySettings } from "../telemetry/settings";
import type { KeelTelemetrySinks } from "../telemetry/workflow-sinks";
import { attemptOf, tracedToolCall } from "../tool-calls/lifecycle";

/**
 * The sinks a traced workflow bundle calls, with nothing behind them: for replay workers
 * (`Worker.runReplayHistory`). A replay must not export a run's workflow spans or count its outcome
 * again; the SDK skips sink calls during a replay anyway, but logs "Workflow referenced an
 * unregistered external sink" for every call to a sink the worker does not have.
 */
export function replayTelemetrySinks(): InjectedSinks<OpenTelemetrySinks & KeelTelemetrySinks> {
  const nothing = { fn() {} };
  return { exporter: { export: nothing }, keelTelemetry: { runEnded: nothing } };
}

/**
 * Interceptors and sinks for `Worker.create`, or nothing when telemetry is off. `workflowModules`:
 * the workflow interceptor modules (`workflowInterceptorModules()`) when the worker bundles its
 * workflows at start (`workflowsPath`); a prebuilt bundle has them already when it was built
 * traced (and a bundled worker cannot resolve the modules' source files).
 */
export function workerTelemetryOptions(
  telemetry: Telemetry | undefined,
  { workflowModules }: { workflowModules?: string[] } = {},
): {
  interceptors?: WorkerInterceptors;
  sinks?: InjectedSinks<KeelTelemetrySinks>;
} {
  if (!telemetry) return {};
  return {
    interceptors: {
      client: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
      ...(workflowModules ? { workflowModules } : {}),
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
        (ctx) => ({ inbound: new KeelActivityInterceptor(ctx) }),
      ],
    },
    sinks: {
      exporter: makeWorkflowExporter(telemetry.spanProcessor, telemetry.resource),
      keelTelemetry: {
        runEnded: {
          fn: (info, outcome) => {
            keelInstruments().runs.add(1, {
              "keel.run.outcome": outcome,
              "keel.workflow.type": info.workflowType,
            });
          },
        },
      },
    },
  };
}

/**
 * The Temporal SDK's own metrics (its native core's: task queue waits such as
 * `temporal_workflow_task_schedule_to_start_latency` and
 * `temporal_activity_schedule_to_start_latency`, poll and slot counts, ...) exported over
 * OTLP/HTTP to the same receiver as Keel's, at the same interval, with the receiver's credentials
 * from the standard `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_METRICS_HEADERS` (the core
 * does not read them itself). For `Runtime.install`, which runs once, before any worker exists.
 */
export function temporalMetricsExporter(settings: TelemetrySettings): MetricsExporterConfig {
  return {
    otel: {
      url: `${settings.endpoint}/v1/metrics`,
      http: true,
      metricsExportInterval: settings.metricsIntervalMs,
      headers: settings.metricsHeaders ?? {},
    },
    // The process's service name on the exported resource, not the core's own on every point.
    globalTags: { "service.name": settings.serviceName },
    attachServiceName: false,
  };
}

/** Input fields every session activity carries. */
function runScopeOf(args: unknown[]): { tenantId: string; sessionId: string } | undefined {
  const first = args[0] as { tenantId?: unknown; sessionId?: unknown } | undefined;
  return typeof first?.tenantId === "string" && typeof first.sessionId === "string"
    ? { tenantId: first.tenantId, sessionId: first.sessionId }
    : undefined;
}

const TOOL_ACTIVITIES = new Set(["executeTool"]);

class KeelActivityInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: ActivityContext) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, "execute">) {
    if (!instrumentation()) return next(input);
    const { info } = this.ctx;
    const instruments = keelInstruments();
    const waitSeconds = Math.max(0, Date.now() - info.currentAttemptScheduledTimestampMs) / 1000;
    instruments.queueWait.record(waitSeconds, {
      "temporal.activity.type": info.activityType,
      "temporal.task_queue.kind": info.taskQueue.includes("/worker/") ? "worker" : "shared",
    });
    const scope = runScopeOf(input.args);
    const attributes: Attributes = {
      "temporal.activity.attempt": info.attempt,
      "temporal.activity.retry": info.attempt > 1,
      "temporal.task_queue": info.taskQueue,
      "temporal.activity.schedule_to_start_ms": Math.round(waitSeconds * 1000),
      ...(scope ? { "keel.tenant_id": scope.tenantId, "keel.session_id": scope.sessionId } : {}),
    };
    trace.getActiveSpan()?.setAttributes(attributes);
    const run = () => (TOOL_ACTIVITIES.has(info.activityType) ? this.toolCall(input, next) : next(input));
    const started = performance.now();
    try {
      return await (scope ? context.with(withRunScope(context.active(), scope), run) : run());
    } finally {
      if (info.activityType === "llmTurn") {
        const model = (input.args[0] as LlmTurnInput).model;
        instruments.turnDuration.record((performance.now() - started) / 1000, {
          "gen_ai.request.model": model,
          ...(scope ? { "keel.tenant_id": scope.tenantId } : {}),
        });
      }
    }
  }

  /** A tool call as an `execute_tool` span (GenAI conventions) with Keel's outcome and replay class. */
  private toolCall(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, "execute">) {
    const call = attemptOf(input.args[0] as ExecuteToolInput, this.ctx.info.attempt);
    return tracedToolCall(call, () => next(input) as Promise<ExecuteToolResult>);
  }
}
