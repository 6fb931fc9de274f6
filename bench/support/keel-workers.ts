/**
 * Keel workers for benchmarks: in this process (`createKeelWorkers`, as the worker process builds
 * them) or as a separate worker process (`src/worker/main.ts`, as the run tests start it) when
 * the worker's own memory is what is measured.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import type { LiveEventOptions } from "../../src/activities/live-events";
import type { S3Settings } from "../../src/store/s3-config";
import { s3SettingsToEnv } from "../../src/store/s3-config";
import { DEFAULT_SNAPSHOT_MAX_BYTES } from "../../src/store/workspace-snapshots";
import { DEFAULT_PROCESS_LIMITS } from "../../src/tools/sandbox";
import type { WorkerConfig } from "../../src/worker/config";
import { createKeelWorkers } from "../../src/worker/create-worker";
import { type BenchStack, projectRoot } from "./stack";

const LOCAL_API_KEY = "local-key";
/** Ceiling on concurrent activities per worker: the production default. */
export const MAX_CONCURRENT_ACTIVITIES = 200;
const WORKER_START_TIMEOUT_MS = 120_000;

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
    sandbox: { isolation: "bwrap", limits: DEFAULT_PROCESS_LIMITS, passEnv: [] },
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
  // The provider reads its endpoint and key from the environment when the workers are built.
  process.env.OPENAI_BASE_URL = stack.llm.openaiBaseURL;
  process.env.OPENAI_API_KEY = LOCAL_API_KEY;
  const workers = await createKeelWorkers({ ...workerConfig(stack, taskQueue, s3), ...options });
  const running = workers.run();
  return {
    taskQueue,
    async stop() {
      workers.shutdown();
      await running;
    },
  };
}

export interface KeelWorkerProcess {
  child: ChildProcess;
  pid: number;
  stop(): Promise<void>;
}

/** Starts `src/worker/main.ts` as its own node process (tsx as a loader) and waits until it polls. */
export async function startWorkerProcess(stack: BenchStack, taskQueue: string): Promise<KeelWorkerProcess> {
  const config = workerConfig(stack, taskQueue, stack.s3.settings);
  const child = spawn(process.execPath, ["--import", "tsx", join(projectRoot, "src/worker/main.ts")], {
    cwd: projectRoot,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      KEEL_TEMPORAL_ADDRESS: config.temporal.address,
      KEEL_TEMPORAL_NAMESPACE: config.temporal.namespace,
      KEEL_TASK_QUEUE: taskQueue,
      KEEL_WORKFLOW_BUNDLE: stack.keelBundlePath,
      KEEL_WORKSPACE_ROOT: config.workspaceRoot,
      KEEL_MAX_CONCURRENT_ACTIVITIES: String(MAX_CONCURRENT_ACTIVITIES),
      ...s3SettingsToEnv(config.s3),
      OPENAI_API_KEY: LOCAL_API_KEY,
      OPENAI_BASE_URL: stack.llm.openaiBaseURL,
    },
  });
  let output = "";
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  await new Promise<void>((done, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`worker did not start:\n${output}`)),
      WORKER_START_TIMEOUT_MS,
    );
    child.stdout?.on("data", () => {
      if (output.includes('"worker started"')) {
        clearTimeout(timer);
        done();
      }
    });
    child.once("exit", () => {
      clearTimeout(timer);
      fail(new Error(`worker exited early:\n${output}`));
    });
  });
  if (child.pid === undefined) throw new Error("worker process has no pid");
  return {
    child,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
