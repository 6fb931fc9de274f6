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

/** A worker that is restarted when it dies; `current` is the process running now. */
export interface SupervisedWorker {
  current(): ServiceProcess;
  stop(graceMs?: number): Promise<void>;
}

/** How often the supervisor looks at the worker, and how many deaths a minute it restarts. */
const SUPERVISE_INTERVAL_MS = 1_000;
const MAX_RESTARTS_PER_MINUTE = 5;

/**
 * Starts the worker and keeps it running: when it dies (killed, crashed), it is started again and
 * `report` says so, since a run waits for a worker and a person should know why it paused. A
 * worker that dies more than MAX_RESTARTS_PER_MINUTE times in a minute is left down (its log says
 * why); `report` says that too.
 */
export async function startSupervisedWorker(
  options: WorkerOptions,
  report: (line: string) => void,
): Promise<SupervisedWorker> {
  let worker = await startWorkerProcess(options);
  let stopped = false;
  let busy = false;
  const deaths: number[] = [];
  const timer = setInterval(async () => {
    if (stopped || busy || worker.isAlive()) return;
    busy = true;
    try {
      const now = Date.now();
      deaths.push(now);
      while ((deaths[0] ?? now) < now - 60_000) deaths.shift();
      if (deaths.length > MAX_RESTARTS_PER_MINUTE) {
        report(
          `worker (pid ${worker.pid}) died ${deaths.length} times in a minute; not restarting it. See ${options.logFile}`,
        );
        clearInterval(timer);
        return;
      }
      report(`worker (pid ${worker.pid}) died; restarting it. Runs wait for it and go on where they were.`);
      worker = await startWorkerProcess(options);
      if (stopped) await worker.stop();
      else report(`worker restarted (pid ${worker.pid})`);
    } catch (error) {
      report(`worker could not be restarted: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      busy = false;
    }
  }, SUPERVISE_INTERVAL_MS);
  return {
    current: () => worker,
    stop: async (graceMs) => {
      stopped = true;
      clearInterval(timer);
      await worker.stop(graceMs);
    },
  };
}
