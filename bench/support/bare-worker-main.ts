/**
 * The bare workflow's worker as its own process (for run-concurrency: its CPU and memory are read
 * like the Keel worker's). Settings from the environment: BENCH_TEMPORAL_ADDRESS,
 * BENCH_TEMPORAL_NAMESPACE, BENCH_TASK_QUEUE, BENCH_WORKFLOW_BUNDLE, BENCH_LATENCY_MS,
 * BENCH_MAX_CONCURRENT_ACTIVITIES. Stops on SIGTERM.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker } from "@temporalio/worker";
import { bareActivities } from "./bare-activities";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger("WARN") });
  const connection = await NativeConnection.connect({ address: required("BENCH_TEMPORAL_ADDRESS") });
  const worker = await Worker.create({
    connection,
    namespace: required("BENCH_TEMPORAL_NAMESPACE"),
    taskQueue: required("BENCH_TASK_QUEUE"),
    workflowBundle: { codePath: required("BENCH_WORKFLOW_BUNDLE") },
    activities: bareActivities(Number(required("BENCH_LATENCY_MS"))),
    maxConcurrentActivityTaskExecutions: Number(required("BENCH_MAX_CONCURRENT_ACTIVITIES")),
  });
  process.once("SIGTERM", () => worker.shutdown());
  const running = worker.run();
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
