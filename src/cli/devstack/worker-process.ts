/**
 * A Keel worker (`node --import tsx src/worker/main.ts`) or runner (`… src/cli/main.ts runner`) as a
 * child process of the local stack, in its own process group like the servers, so that stopping
 * the stack stops it too; supervised, so that one that dies is started again.
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

/** Which Keel process to start: its name, its arguments after `node --import tsx`, the log text that says it is up. */
export interface KeelProcessKind {
  name: string;
  args: string[];
  readyText: string;
}

const WORKER_PROCESS: KeelProcessKind = {
  name: "worker",
  args: [join(projectRoot, "src/worker/main.ts")],
  readyText: '"worker started"',
};

/** `keel runner --env ENVIRONMENT …args`; it is up once it logged "runner started". */
export function runnerProcess(environment: string, args: string[] = []): KeelProcessKind {
  return {
    name: "runner",
    args: [join(projectRoot, "src/cli/main.ts"), "runner", "--env", environment, ...args],
    readyText: '"msg":"runner started"',
  };
}

export interface WorkerOptions {
  logFile: string;
  /** KEEL_* and provider variables for the process (merged over PATH and HOME). */
  env: Record<string, string | undefined>;
  /** Default: the worker. */
  kind?: KeelProcessKind;
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

/**
 * Starts the worker (or `options.kind`) and resolves once it logged its ready text; rejects with
 * its log otherwise.
 */
export async function startWorkerProcess(options: WorkerOptions): Promise<ServiceProcess> {
  const kind = options.kind ?? WORKER_PROCESS;
  // The log is appended to across restarts: only what this start writes counts.
  const offset = sizeOf(options.logFile);
  const worker = startServiceProcess(kind.name, process.execPath, ["--import", "tsx", ...kind.args], {
    logFile: options.logFile,
    cwd: projectRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env },
  });
  const deadline = Date.now() + WORKER_START_TIMEOUT_MS;
  for (;;) {
    const output = readFrom(options.logFile, offset);
    if (output.includes(kind.readyText)) return worker;
    if (!worker.isAlive() || Date.now() > deadline) {
      const reason = worker.isAlive() ? "did not start in time" : "exited";
      await worker.stop();
      throw new Error(`the ${kind.name} ${reason}; see ${options.logFile}:\n${output.slice(-2_000)}`);
    }
    await sleep(POLL_INTERVAL_MS);
  }
}

/** A worker (or runner) that is restarted when it dies; `current` is the process running now. */
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
  const { name } = options.kind ?? WORKER_PROCESS;
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
          `${name} (pid ${worker.pid}) died ${deaths.length} times in a minute; not restarting it. See ${options.logFile}`,
        );
        clearInterval(timer);
        return;
      }
      report(`${name} (pid ${worker.pid}) died; restarting it. Runs wait for it and go on where they were.`);
      worker = await startWorkerProcess(options);
      if (stopped) await worker.stop();
      else report(`${name} restarted (pid ${worker.pid})`);
    } catch (error) {
      report(`${name} could not be restarted: ${error instanceof Error ? error.message : String(error)}`);
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
