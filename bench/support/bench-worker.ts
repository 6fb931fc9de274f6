/** Plain Temporal workers running the benchmarks' own workflows and activities (in this process or apart). */
import { NativeConnection, Worker } from "@temporalio/worker";
import { s3SettingsToEnv } from "../../src/store/s3-config";
import type { BareIo } from "./bare-io-activities";
import type { BenchStack } from "./stack";
import { spawnWorkerProcess, type WorkerProcess } from "./worker-process";

export interface BenchWorker {
  stop(): Promise<void>;
}

export async function startBenchWorker(
  stack: BenchStack,
  taskQueue: string,
  bundlePath: string,
  activities: object,
): Promise<BenchWorker> {
  const connection = await NativeConnection.connect({ address: stack.temporal.address });
  const worker = await Worker.create({
    connection,
    namespace: stack.temporal.namespace,
    taskQueue,
    workflowBundle: { codePath: bundlePath },
    activities,
  });
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/** What a bare worker process serves besides the bare workflow's own queue. */
export interface BareWorkerOptions {
  /** Also serve the tool activity on this queue (for `shapedTurns`). */
  toolTaskQueue?: string;
  /** Do a turn's I/O in the activities (`bare-io-activities.ts`) instead of nothing. */
  io?: BareIo;
}

/**
 * Starts the bare workflow's worker as its own process (`bare-worker-main.ts`) on `taskQueue`,
 * its "llm" activity waiting `latencyMs` (or, with `io`, calling the local LLM server), with as
 * many activity slots as a Keel worker.
 */
export function startBareWorkerProcess(
  stack: BenchStack,
  taskQueue: string,
  bundlePath: string,
  latencyMs: number,
  maxConcurrentActivities: number,
  { toolTaskQueue, io }: BareWorkerOptions = {},
): Promise<WorkerProcess> {
  return spawnWorkerProcess("bench/support/bare-worker-main.ts", {
    BENCH_TEMPORAL_ADDRESS: stack.temporal.address,
    BENCH_TEMPORAL_NAMESPACE: stack.temporal.namespace,
    BENCH_TASK_QUEUE: taskQueue,
    BENCH_WORKFLOW_BUNDLE: bundlePath,
    BENCH_LATENCY_MS: String(latencyMs),
    BENCH_MAX_CONCURRENT_ACTIVITIES: String(maxConcurrentActivities),
    ...(toolTaskQueue ? { BENCH_TOOL_TASK_QUEUE: toolTaskQueue } : {}),
    ...(io
      ? { ...s3SettingsToEnv(io.s3), BENCH_IO_LLM_BASE_URL: io.openaiBaseURL, BENCH_IO_FOLDER: io.folder }
      : {}),
  });
}
