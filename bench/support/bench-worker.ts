/** A plain Temporal worker in this process running the benchmarks' own workflows and activities. */
import { NativeConnection, Worker } from "@temporalio/worker";
import type { BenchStack } from "./stack";

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
