/**
 * Workflow interceptors of a traced workflow bundle (see `workflowInterceptorModules`): Temporal's
 * OpenTelemetry interceptors, kept off the workflow's own random numbers, and a report of how
 * each workflow ended to the worker's `keelTelemetry` sink (the runs-by-outcome metric).
 * Workflow code: deterministic, imports only @temporalio/workflow and the interceptors.
 *
 * Temporal's interceptors make span ids with `Math.random()`, the stream the run draws its entry
 * ids from. Unwrapped, turning tracing on would change every later entry id of a run (a run
 * traced on one worker and replayed on an untraced one would disagree with its own session),
 * and update validators and queries, which a replay does not run, would shift the stream too. So
 * their spans draw from named streams of their own: the replayed handlers from one (a worker that
 * replays a run makes the same span ids as the worker it replaces, and a takeover's activity finds
 * the parent span the dead worker announced), validators and queries from another.
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from "@temporalio/interceptors-opentelemetry/lib/workflow";
import {
  ContinueAsNew,
  getRandomStream,
  type Next,
  proxySinks,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowRandomStream,
} from "@temporalio/workflow";
import type { KeelTelemetrySinks } from "./workflow-sinks";

const { keelTelemetry } = proxySinks<KeelTelemetrySinks>();

/** Handlers a replay does not run: their spans must not move the replayed stream. */
const NOT_REPLAYED = new Set(["validateUpdate", "handleQuery"]);

/** `interceptor` with every method run with `Math.random()` routed to a named stream. */
function onOwnRandomStreams<T extends object>(interceptor: T): T {
  return new Proxy(interceptor, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      const stream: WorkflowRandomStream = getRandomStream(
        NOT_REPLAYED.has(String(property)) ? "keel.otel.unreplayed" : "keel.otel",
      );
      return (...args: unknown[]) => stream.with(() => value.apply(target, args));
    },
  });
}

class RunOutcomeInterceptor implements WorkflowInboundCallsInterceptor {
  async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, "execute">) {
    try {
      const result = await next(input);
      const status = (result as { status?: unknown } | undefined)?.status;
      keelTelemetry.runEnded(typeof status === "string" ? status : "completed");
      return result;
    } catch (error) {
      keelTelemetry.runEnded(error instanceof ContinueAsNew ? "continued_as_new" : "failed");
      throw error;
    }
  }
}

export const interceptors = (): WorkflowInterceptors => ({
  inbound: [onOwnRandomStreams(new OpenTelemetryInboundInterceptor()), new RunOutcomeInterceptor()],
  outbound: [onOwnRandomStreams(new OpenTelemetryOutboundInterceptor())],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
