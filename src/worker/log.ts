/** The worker's log (JSON lines on stdout, see logging/logger) and the Temporal SDK's lines routed into it. */
import { DefaultLogger, type LogEntry, type MetricsExporterConfig, Runtime } from "@temporalio/worker";
import { createLogger, type LogLevel } from "../logging/logger";

export const log = createLogger("worker");

const LEVELS: Record<LogEntry["level"], LogLevel> = {
  TRACE: "debug",
  DEBUG: "debug",
  INFO: "info",
  WARN: "warn",
  ERROR: "error",
};

/**
 * Sends the Temporal SDK's own log lines, and those of its native core (which would otherwise
 * print to stderr with terminal colour codes), through `log`: the worker's output is JSON lines
 * only, also in a log file. With `metrics` (telemetry on) the SDK's own metrics are exported too.
 * Call once, before the first connection or worker is created.
 */
export function installTemporalLogging(metrics?: MetricsExporterConfig): void {
  Runtime.install({
    logger: new DefaultLogger("INFO", (entry) =>
      log(LEVELS[entry.level], entry.message, { source: "temporal", ...entry.meta }),
    ),
    telemetryOptions: {
      logging: { filter: { core: "WARN", other: "ERROR" }, forward: {} },
      ...(metrics ? { metrics } : {}),
    },
  });
}
