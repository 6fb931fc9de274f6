/**
 * The bare workflow's worker as its own process (for run-concurrency: its CPU and memory are read
 * like the Keel worker's). Settings from the environment: BENCH_TEMPORAL_ADDRESS,
 * BENCH_TEMPORAL_NAMESPACE, BENCH_TASK_QUEUE, BENCH_WORKFLOW_BUNDLE, BENCH_LATENCY_MS,
 * BENCH_MAX_CONCURRENT_ACTIVITIES, BENCH_TOOL_TASK_QUEUE (optional: a second, activity-only
 * worker on that queue, as a Keel worker process has for its workspaces' tool calls), and
 * BENCH_IO_LLM_BASE_URL with BENCH_IO_FOLDER and KEEL_S3_* (optional: activities doing a turn's
 * I/O, `bare-io-activities.ts`, loaded only then so a no-op worker holds no S3 or OpenAI SDK).
 * Stops on SIGTERM.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker } from "@temporalio/worker";
import { bareActivities } from "./bare-activities";
import type { BareActivities } from "./bare-workflow";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

function activitiesFromEnv(): BareActivities {
  const openaiBaseURL = process.env.BENCH_IO_LLM_BASE_URL;
  if (!openaiBaseURL) return bareActivities(Number(required("BENCH_LATENCY_MS")));
  // Required only here, so a no-op worker never loads the S3 and OpenAI SDKs.
  const io = require("./bare-io-activities") as typeof import("./bare-io-activities");
  const s3 = require("../../src/store/s3-config") as typeof import("../../src/store/s3-config");
  return io.bareIoActivities({
    s3: s3.s3SettingsFromEnv(process.env),
    openaiBaseURL,
    folder: required("BENCH_IO_FOLDER"),
  });
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger("WARN") });
  const connection = await NativeConnection.connect({ address: required("BENCH_TEMPORAL_ADDRESS") });
  const namespace = required("BENCH_TEMPORAL_NAMESPACE");
  const activities = activitiesFromEnv();
  const maxConcurrentActivityTaskExecutions = Number(required("BENCH_MAX_CONCURRENT_ACTIVITIES"));
  const workers = [
    await Worker.create({
      connection,
      namespace,
      taskQueue: required("BENCH_TASK_QUEUE"),
      workflowBundle: { codePath: required("BENCH_WORKFLOW_BUNDLE") },
      activities,
      maxConcurrentActivityTaskExecutions,
    }),
  ];
  const toolTaskQueue = process.env.BENCH_TOOL_TASK_QUEUE;
  if (toolTaskQueue) {
    workers.push(
      await Worker.create({
        connection,
        namespace,
        taskQueue: toolTaskQueue,
        activities: { bareTool: activities.bareTool },
        maxConcurrentActivityTaskExecutions,
      }),
    );
  }
  process.once("SIGTERM", () => {
    for (const worker of workers) worker.shutdown();
  });
  const running = Promise.all(workers.map((worker) => worker.run()));
  // The line spawnWorkerProcess waits for (WORKER_STARTED); not imported, to keep this process
  // free of the benchmark stack's modules.
  console.log(JSON.stringify({ msg: "worker started" }));
  await running;
  await connection.close();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
