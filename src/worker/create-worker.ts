/**
 * Builds a worker process's Temporal workers: one on the shared task queue (workflows and every
 * activity) and one on this process's own task queue (tool activities of the sessions whose
 * workspaces it holds).
 */

import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { NativeConnection, Worker } from "@temporalio/worker";
import { createActivities } from "../activities";
import { loadCatalog } from "../providers/models";
import { createProvider } from "../providers/registry";
import { EntryCache } from "../store/entry-cache";
import { keelDataConverter } from "../store/payload-storage";
import { createS3Client } from "../store/s3-config";
import { SessionStore } from "../store/session-store";
import { ToolCallMarkers } from "../store/tool-call-markers";
import type { WorkerConfig } from "./config";

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
  const activities = createActivities({
    store: new SessionStore(s3, config.s3, { cache: new EntryCache() }),
    markers: new ToolCallMarkers(s3, config.s3),
    provider: createProvider(),
    catalog: loadCatalog(),
    workspaceRoot: config.workspaceRoot,
    workerTaskQueue: ownTaskQueue,
  });
  // Cancellation reaches an activity with its next heartbeat: send them often enough that an
  // abort lands within a couple of seconds.
  const common = {
    dataConverter: keelDataConverter(s3, config.s3),
    defaultHeartbeatThrottleInterval: "1 second",
    maxHeartbeatThrottleInterval: "2 seconds",
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
    activities: { executeTool: activities.executeTool },
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
