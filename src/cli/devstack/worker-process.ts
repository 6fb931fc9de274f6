/**
 * A Keel worker as a child process of the local stack (`node --import tsx src/worker/main.ts`),
 * in its own process group like the servers, so that stopping the stack stops it too.
 */

import { closeSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type ServiceProcess, startServiceProcess } from "./service-process";
import { projectRoot } from "./tools";

/** Bundling the workflow code at start takes a while on a small machine. */
const WORKER_START_TIMEOUT_MS = 120_000;
const POLL_INTERVAL_MS = 200;
/** A worker drains in-flight activities on SIGTERM; it is killed after this long. */
export const WORKER_STOP_GRACE_MS = 10_000;

export interface WorkerOptions {
  logFile: string;
  /** KEEL_* and provider variables for the worker (merged over PATH and HOME). */
  env: Record<string, string | undefined>;
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function readFrom(file: string, offset: number): string {
  const fd = openSync(file, "r");
  try {
    const length = Math.max(0, sizeOf(file) - offset);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, offset);
    return buffer.toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** Starts the worker and resolves once it logged "worker started"; rejects with its log otherwise. */
export async function startWorkerProcess(options: WorkerOptions): Promise<ServiceProcess> {
  // The log is appended to across restarts: only what this start writes counts.
  const offset = sizeOf(options.logFile);
  const worker = startServiceProcess(
    "worker",
    process.execPath,
    ["--import", "tsx", join(projectRoot, "src/worker/main.ts")],
    {
      logFile: options.logFile,
      cwd: projectRoot,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env },
    },
  );
  const deadline = Date.now() + WORKER_START_TIMEOUT_MS;
  for (;;) {
    const output = readFrom(options.logFile, offset);
    if (output.includes('"worker started"')) return worker;
    if (!worker.isAlive() || Date.now() > deadline) {
      const reason = worker.isAlive() ? "did not start in time" : "exited";
      await worker.stop();
      throw new Error(`the worker ${reason}; see ${options.logFile}:\n${output.slice(-2_000)}`);
    }
    await sleep(POLL_INTERVAL_MS);
  }
}
