/**
 * The long-running worker process: `tsx src/worker/main.ts`. Configuration from KEEL_* variables
 * (see docs/architecture.md); SIGINT / SIGTERM drain in-flight tasks and stop it.
 */
import { workerConfigFromEnv } from "./config";
import { createKeelWorkers } from "./create-worker";
import { installTemporalLogging, log } from "./log";

async function main(): Promise<void> {
  const config = workerConfigFromEnv();
  installTemporalLogging();
  const workers = await createKeelWorkers(config);
  log("info", "worker started", {
    taskQueue: config.taskQueue,
    ownTaskQueue: workers.ownTaskQueue,
    namespace: config.temporal.namespace,
  });
  await workers.run();
  log("info", "worker stopped", {});
}

main().catch((error: unknown) => {
  log("error", "worker failed", { error: error instanceof Error ? error.message : String(error) });
  process.exit(1);
});
