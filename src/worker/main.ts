/**
 * The long-running worker process: `tsx src/worker/main.ts`. Configuration from KEEL_* variables
 * (see docs/architecture.md); SIGINT / SIGTERM drain in-flight tasks and stop it.
 */
import { startTelemetry } from "../telemetry/sdk";
import { telemetrySettingsFromEnv } from "../telemetry/settings";
import { workerConfigFromEnv } from "./config";
import { createKeelWorkers } from "./create-worker";
import { installTemporalLogging, log } from "./log";
import { temporalMetricsExporter } from "./telemetry";

async function main(): Promise<void> {
  const config = workerConfigFromEnv();
  const telemetrySettings = telemetrySettingsFromEnv("keel-worker");
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
