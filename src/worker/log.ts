/** Structured JSON log lines on stdout; callers pass only non-secret fields. */
import { DefaultLogger, type LogEntry, Runtime } from "@temporalio/worker";

type Level = "info" | "warn" | "error";

/** Field values JSON has no form for: errors by their message, bigints as decimal strings. */
function jsonValue(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  return typeof value === "bigint" ? value.toString() : value;
}

export function log(level: Level, message: string, fields: Record<string, unknown>): void {
  const line = JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }, jsonValue);
  process.stdout.write(`${line}\n`);
}

const LEVELS: Record<LogEntry["level"], Level> = {
  TRACE: "info",
  DEBUG: "info",
  INFO: "info",
  WARN: "warn",
  ERROR: "error",
};

/**
 * Sends the Temporal SDK's own log lines, and those of its native core (which would otherwise
 * print to stderr with terminal colour codes), through `log`: the worker's output is JSON lines
 * only, also in a log file. Call once, before the first connection or worker is created.
 */
export function installTemporalLogging(): void {
  Runtime.install({
    logger: new DefaultLogger("INFO", (entry) =>
      log(LEVELS[entry.level], entry.message, { source: "temporal", ...entry.meta }),
    ),
    telemetryOptions: { logging: { filter: { core: "WARN", other: "ERROR" }, forward: {} } },
  });
}
