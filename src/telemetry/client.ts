/**
 * Temporal client options that carry the active trace into the workflows it starts and the
 * signals and updates it sends (Temporal's OpenTelemetry client interceptor); none when
 * telemetry is off.
 */
import type { ClientOptions } from "@temporalio/client";
// The client entry alone: the package root also loads the worker plugin, whose require.resolve of
// the workflow interceptors cannot be bundled into the API function.
import { OpenTelemetryWorkflowClientInterceptor } from "@temporalio/interceptors-opentelemetry/lib/client";
import { instrumentation } from "./instrumentation";

export function clientTelemetryOptions(): Pick<ClientOptions, "interceptors"> {
  if (!instrumentation()) return {};
  return { interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } };
}
