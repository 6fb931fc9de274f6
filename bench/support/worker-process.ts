/** A worker as its own node process (tsx as a loader), so its CPU and memory can be read apart. */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { projectRoot } from "./stack";

const WORKER_START_TIMEOUT_MS = 120_000;
/** What a worker process prints (in a JSON log line) once it polls. */
export const WORKER_STARTED = '"worker started"';

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** SIGKILL: the worker dies without a word, as a crashed host would. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts `script` (relative to the project root) with `env` (plus PATH and HOME) and waits
 * until it prints {@link WORKER_STARTED}; fails with the process's output if it exits first.
 */
export async function spawnWorkerProcess(
  script: string,
  env: Record<string, string>,
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", join(projectRoot, script)], {
    cwd: projectRoot,
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
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
      () => fail(new Error(`${script} did not start:\n${output}`)),
      WORKER_START_TIMEOUT_MS,
    );
    child.stdout?.on("data", () => {
      if (output.includes(WORKER_STARTED)) {
        clearTimeout(timer);
        done();
      }
    });
    child.once("exit", () => {
      clearTimeout(timer);
      fail(new Error(`${script} exited early:\n${output}`));
    });
  });
  if (child.pid === undefined) throw new Error(`${script} has no pid`);
  return {
    child,
    pid: child.pid,
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
