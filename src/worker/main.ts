/**
 * The long-running worker process: `tsx src/worker/main.ts`. Configuration from KEEL_* variables
 * (see docs/architecture.md); SIGINT / SIGTERM drain in-flight tasks and stop it.
 */
import { describeUnknownSettings, unknownSettings } from "../core/env-settings";
import { startTelemetry } from "../telemetry/sdk";
import { workerConfigFromEnv } from "./config";
import { createKeelWorkers } from "./create-worker";
import { installTemporalLogging, log } from "./log";
import { temporalMetricsExporter } from "./telemetry";

async function main(): Promise<void> {
  // The one read of this process's environment: everything below gets its settings from here.
  const config = workerConfigFromEnv(process.env);
  for (const line of describeUnknownSettings(unknownSettings(process.env))) log("warn", line, {});
  const telemetrySettings = config.telemetry;
  installTemporalLogging(telemetrySettings && temporalMetricsExporter(telemetrySettings));
  const telemetry = telemetrySettings ? startTelemetry(telemetrySettings) : undefined;
  const workers = await createKeelWorkers(config, telemetry);
  log("info", "worker started", {
    taskQueue: config.taskQueue,
    ownTaskQueue: workers.ownTaskQueue,
    namespace: config.temporal.namespace,
    // On or off only: an endpoint URL may carry credentials.
    telemetry: telemetry ? "on" : "off",
  });
  await workers.run();
  await telemetry?.shutdown();
  log("info", "worker stopped", {});
}

main().catch((error: unknown) => {
  log("error", "worker failed", { error: error instanceof Error ? error.message : String(error) });
  process.exit(1);
});
