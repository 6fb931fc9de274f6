/**
 * Builds a worker process's Temporal workers: one on the shared task queue (workflows and every
 * activity) and one on this process's own task queue (tool activities of the sessions whose
 * workspaces it holds).
 */

import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { resolve } from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { NativeConnection, Worker } from "@temporalio/worker";
import { evictIdleWorkspaces } from "../activities/workspace-eviction";
import { temporalConnectOptions } from "../core/temporal-settings";
import { createS3Client } from "../store/s3-config";
import { WorkspaceSnapshots } from "../store/workspace-snapshots";
import type { Telemetry } from "../telemetry/sdk";
import { workflowInterceptorModules } from "../telemetry/workflow-modules";
import { sweepLeftoverSiblings } from "../tools/workspace-siblings";
import { type WorkerConfig, workflowBundleOf } from "./config";
import { log } from "./log";
import { workerTelemetryOptions } from "./telemetry";
import {
  commonWorkerOptions,
  launcherFromConfig,
  workerActivities,
  workerMcpConnections,
} from "./worker-setup";

const DEFAULT_SHUTDOWN_GRACE_MS = 60_000;

export interface KeelWorkers {
  shared: Worker;
  own: Worker;
  ownTaskQueue: string;
  /** Runs both until shutdown (SIGINT / SIGTERM, or `shutdown()`), then closes the connection. */
  run(): Promise<void>;
  shutdown(): void;
}

/**
 * The task queue of the workspaces under `workspaceRoot` on this host: the same for every
 * worker process that serves that folder, so a worker restarted on it (`npm run dev` again, a
 * replaced container with the same volume) polls the queue its predecessor was given tool calls
 * on and runs the ones already scheduled there at once, instead of after their
 * schedule-to-start timeout. Workspace locks name this queue as their holder.
 */
export function workspaceTaskQueue(taskQueue: string, workspaceRoot: string, host = hostname()): string {
  const root = createHash("sha256").update(resolve(workspaceRoot)).digest("hex").slice(0, 12);
  return `${taskQueue}/worker/${host}-${root}`;
}

/** The workers; with `telemetry` (tracing on) both carry its interceptors and sinks. */
export async function createKeelWorkers(config: WorkerConfig, telemetry?: Telemetry): Promise<KeelWorkers> {
  const connection = await NativeConnection.connect(temporalConnectOptions(config.temporal));
  const s3 = createS3Client(config.s3);
  const ownTaskQueue = workspaceTaskQueue(config.taskQueue, config.workspaceRoot);
  const mcp = workerMcpConnections(config);
  const launcher = launcherFromConfig(config, s3);
  const stopping = new AbortController();
  const activities = workerActivities(config, s3, ownTaskQueue, mcp, launcher, stopping.signal);
  const bundle = workflowBundleOf(config, telemetry !== undefined);
  const common = {
    ...commonWorkerOptions(config, s3),
    // A draining worker lets in-flight activities finish (ECS gives 120 s after SIGTERM).
    shutdownGraceTime: config.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS,
    ...workerTelemetryOptions(telemetry, bundle ? {} : { workflowModules: workflowInterceptorModules() }),
  };
  const shared = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.taskQueue,
    ...(bundle
      ? { workflowBundle: { codePath: bundle } }
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
      mergeSubAgentWorkspace: activities.mergeSubAgentWorkspace,
      listMcpTools: activities.listMcpTools,
    },
    maxConcurrentActivityTaskExecutions: config.maxConcurrentActivities,
    ...common,
  });
  return {
    shared,
    own,
    ownTaskQueue,
    async run() {
      // Moved-aside and staging copies that a crash of an earlier process left on this disk.
      void sweepLeftovers(config.workspaceRoot);
      const eviction = startIdleEviction(config, s3, ownTaskQueue);
      // Shutdown starts inside the SDK (its signal handlers) as well as here: its state says so.
      const stateWatch = setInterval(() => {
        if (shared.getState() !== "RUNNING" || own.getState() !== "RUNNING") stopping.abort();
      }, 250);
      try {
        await Promise.all([shared.run(), own.run()]);
      } finally {
        clearInterval(stateWatch);
        stopping.abort();
        eviction.stop();
        // Pooled MCP server processes would keep the process alive until their idle close.
        await mcp.closeAll();
        await launcher?.close();
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

/** Removes the siblings of workspaces that dead processes of this host left; logs how many. Never throws. */
async function sweepLeftovers(root: string): Promise<void> {
  const swept = await sweepLeftoverSiblings(root);
  if (swept.length > 0)
    log("info", "removed workspace copies left by dead processes", { count: swept.length });
}

/** Evicts idle, fully snapshotted workspaces every quarter of the idle period (at most every minute). */
function startIdleEviction(config: WorkerConfig, s3: S3Client, ownerId: string): { stop(): void } {
  if (config.workspaceIdleEvictMs <= 0) return { stop() {} };
  const snapshots = new WorkspaceSnapshots(s3, config.s3);
  let running = false;
  const timer = setInterval(
    () => {
      if (running) return;
      running = true;
      evictIdleWorkspaces({
        root: config.workspaceRoot,
        ownerId,
        idleMs: config.workspaceIdleEvictMs,
        snapshots,
      })
        .then((evicted) => {
          if (evicted.length > 0) log("info", "evicted idle workspaces", { count: evicted.length });
        })
        .catch((error: unknown) =>
          log("warn", "workspace eviction failed", {
            error: error instanceof Error ? error.message : String(error),
          }),
        )
        .then(() => sweepLeftovers(config.workspaceRoot))
        .finally(() => {
          running = false;
        });
    },
    Math.min(60_000, Math.max(1_000, config.workspaceIdleEvictMs / 4)),
  );
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
