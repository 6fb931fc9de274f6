/**
 * Builds a worker process's Temporal workers: one on the shared task queue (workflows and every
 * activity) and one on this process's own task queue (tool activities of the sessions whose
 * workspaces it holds).
 */

import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { NativeConnection, Worker } from "@temporalio/worker";
import { createS3Client } from "../store/s3-config";
import type { WorkerConfig } from "./config";
import { commonWorkerOptions, workerActivities } from "./worker-parts";

const DEFAULT_SHUTDOWN_GRACE_MS = 60_000;

export interface KeelWorkers {
  shared: Worker;
  own: Worker;
  ownTaskQueue: string;
  /** Runs both until shutdown (SIGINT / SIGTERM, or `shutdown()`), then closes the connection. */
  run(): Promise<void>;
  shutdown(): void;
}

export async function createKeelWorkers(config: WorkerConfig): Promise<KeelWorkers> {
  const connection = await NativeConnection.connect({
    address: config.temporal.address,
    ...(config.temporal.apiKey ? { tls: true, apiKey: config.temporal.apiKey } : {}),
  });
  const s3 = createS3Client(config.s3);
  const ownTaskQueue = `${config.taskQueue}/worker/${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
  const activities = workerActivities(config, s3, ownTaskQueue);
  const common = {
    ...commonWorkerOptions(config, s3),
    // A draining worker lets in-flight activities finish (ECS gives 120 s after SIGTERM).
    shutdownGraceTime: config.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS,
  };
  const shared = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.taskQueue,
    ...(config.workflowBundlePath
      ? { workflowBundle: { codePath: config.workflowBundlePath } }
      : { workflowsPath: require.resolve("../workflows") }),
    activities,
    maxConcurrentActivityTaskExecutions: config.maxConcurrentActivities,
    ...common,
  });
  const own = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: ownTaskQueue,
    activities: {
      executeTool: activities.executeTool,
      snapshotWorkspace: activities.snapshotWorkspace,
      restoreWorkspace: activities.restoreWorkspace,
    },
    maxConcurrentActivityTaskExecutions: config.maxConcurrentActivities,
    ...common,
  });
  return {
    shared,
    own,
    ownTaskQueue,
    async run() {
      try {
        await Promise.all([shared.run(), own.run()]);
      } finally {
        await connection.close();
        s3.destroy();
      }
    },
    shutdown() {
      if (shared.getState() === "RUNNING") shared.shutdown();
      if (own.getState() === "RUNNING") own.shutdown();
    },
  };
}
