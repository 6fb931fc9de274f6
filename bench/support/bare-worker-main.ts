/**
 * The bare workflow's worker as its own process (for run-concurrency: its CPU and memory are read
 * like the Keel worker's). Settings from the environment: BENCH_TEMPORAL_ADDRESS,
 * BENCH_TEMPORAL_NAMESPACE, BENCH_TASK_QUEUE, BENCH_WORKFLOW_BUNDLE, BENCH_LATENCY_MS,
 * BENCH_MAX_CONCURRENT_ACTIVITIES, and BENCH_TOOL_TASK_QUEUE (optional: a second, activity-only
 * worker on that queue, as a Keel worker process has for its workspaces' tool calls). Stops on
 * SIGTERM.
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
  const namespace = required("BENCH_TEMPORAL_NAMESPACE");
  const activities = bareActivities(Number(required("BENCH_LATENCY_MS")));
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
