/**
 * Temporal client options that carry the active trace into the workflows it starts and the
 * signals and updates it sends (Temporal's OpenTelemetry client interceptor); none when
 * telemetry is off.
 */
import type { ClientOptions } from "@temporalio/client";
import { OpenTelemetryWorkflowClientInterceptor } from "@temporalio/interceptors-opentelemetry";
import { instrumentation } from "./instrumentation";

export function clientTelemetryOptions(): Pick<ClientOptions, "interceptors"> {
  if (!instrumentation()) return {};
  return { interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } };
}
