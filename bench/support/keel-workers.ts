/**
 * Keel workers for benchmarks: in this process (`createKeelWorkers`, as the worker process builds
 * them) or as a separate worker process (`src/worker/main.ts`, as the run tests start it) when
 * the worker's own memory is what is measured.
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import type { LiveEventOptions } from "../../src/activities/live-events";
import type { S3Settings } from "../../src/store/s3-config";
import { s3SettingsToEnv } from "../../src/store/s3-config";
import { DEFAULT_SNAPSHOT_MAX_BYTES } from "../../src/store/workspace-snapshots";
import { DEFAULT_PROCESS_LIMITS } from "../../src/tools/sandbox";
import type { WorkerConfig } from "../../src/worker/config";
import { createKeelWorkers } from "../../src/worker/create-worker";
import type { BenchStack } from "./stack";
import { spawnWorkerProcess, type WorkerProcess } from "./worker-process";

const LOCAL_API_KEY = "local-key";
/** Ceiling on concurrent activities per worker: the production default. */
export const MAX_CONCURRENT_ACTIVITIES = 200;

export interface InProcessKeelWorkers {
  taskQueue: string;
  stop(): Promise<void>;
}

function workerConfig(stack: BenchStack, taskQueue: string, s3: S3Settings): WorkerConfig {
  return {
    temporal: { address: stack.temporal.address, namespace: stack.temporal.namespace },
    taskQueue,
    workspaceRoot: mkdtempSync(join(stack.dir, "workspaces-")),
    workflowBundlePath: stack.keelBundlePath,
    maxConcurrentActivities: MAX_CONCURRENT_ACTIVITIES,
    s3,
    sandbox: {
      isolation: "bwrap",
      limits: DEFAULT_PROCESS_LIMITS,
      passEnv: [],
      hostEnv: {},
      fullNetwork: "off",
    },
    snapshotMaxBytes: DEFAULT_SNAPSHOT_MAX_BYTES,
    workspaceIdleEvictMs: 0,
  };
}

/**
 * Starts Keel's workers in this process on `taskQueue`, talking to the local LLM server and to
 * `s3` (the stack's S3 server unless a proxy in front of it is given).
 */
export async function startInProcessWorkers(
  stack: BenchStack,
  taskQueue: string,
  s3: S3Settings = stack.s3.settings,
  options: { liveEvents?: LiveEventOptions | false } = {},
): Promise<InProcessKeelWorkers> {
  // The provider reads keys and base URLs only from the environment its entry point passes down.
  const providers = { env: { OPENAI_BASE_URL: stack.llm.openaiBaseURL, OPENAI_API_KEY: LOCAL_API_KEY } };
  const workers = await createKeelWorkers({ ...workerConfig(stack, taskQueue, s3), providers, ...options });
  const running = workers.run();
  return {
    taskQueue,
    async stop() {
      workers.shutdown();
      await running;
    },
  };
}

/**
 * Starts `src/worker/main.ts` as its own node process, talking to the local LLM server and to
 * `s3` (the stack's S3 server unless a proxy in front of it is given); waits until it polls.
 */
export function startWorkerProcess(
  stack: BenchStack,
  taskQueue: string,
  s3: S3Settings = stack.s3.settings,
  /** Overrides of its environment (e.g. a smaller KEEL_MAX_CONCURRENT_ACTIVITIES). */
  env: Record<string, string> = {},
): Promise<WorkerProcess> {
  const config = workerConfig(stack, taskQueue, s3);
  return spawnWorkerProcess("src/worker/main.ts", {
    KEEL_TEMPORAL_ADDRESS: config.temporal.address,
    KEEL_TEMPORAL_NAMESPACE: config.temporal.namespace,
    KEEL_TASK_QUEUE: taskQueue,
    KEEL_WORKFLOW_BUNDLE: stack.keelBundlePath,
    KEEL_WORKSPACE_ROOT: config.workspaceRoot,
    KEEL_MAX_CONCURRENT_ACTIVITIES: String(MAX_CONCURRENT_ACTIVITIES),
    ...s3SettingsToEnv(config.s3),
    OPENAI_API_KEY: LOCAL_API_KEY,
    OPENAI_BASE_URL: stack.llm.openaiBaseURL,
    ...env,
  });
}
