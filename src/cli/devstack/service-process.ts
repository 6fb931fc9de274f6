/**
 * A local server started as its own process group, stopped as a group, and never orphaned: a
 * detached reaper shell kills the group once the process that started it is gone, even if that
 * process was SIGKILLed (a crashed or interrupted test run).
 */

import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

export interface ServiceProcess {
  name: string;
  pid: number;
  logFile: string;
  isAlive(): boolean;
  /** Terminates the whole process group (SIGTERM, then SIGKILL after `graceMs`). Idempotent. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILLs the whole process group at once (a crash: nothing drains) and waits for the exit. */
  kill(): Promise<void>;
}

export function startServiceProcess(
  name: string,
  command: string,
  args: string[],
  options: { logFile: string; env?: NodeJS.ProcessEnv; cwd?: string },
): ServiceProcess {
  const log = openSync(options.logFile, "a");
  const child: ChildProcess = spawn(command, args, {
    detached: true,
    stdio: ["ignore", log, log],
    env: options.env ?? process.env,
    cwd: options.cwd,
  });
  closeSync(log);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${name}: could not start ${command}`);
  let exited = false;
  const exitedPromise = new Promise<void>((resolveExit) =>
    child.once("exit", () => {
      exited = true;
      resolveExit();
    }),
  );
  child.unref();

  const reaper = spawn(
    "sh",
    [
      "-c",
      `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -TERM -${pid} 2>/dev/null; sleep 5; kill -KILL -${pid} 2>/dev/null`,
    ],
    { detached: true, stdio: "ignore" },
  );
  reaper.unref();

  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      // the group is already gone
    }
  };

  const stopReaper = () => {
    try {
      if (reaper.pid !== undefined) process.kill(reaper.pid, "SIGKILL");
    } catch {
      // reaper already finished
    }
  };

  return {
    name,
    pid,
    logFile: options.logFile,
    isAlive: () => !exited,
    async stop(graceMs = 5000) {
      if (!exited) {
        signalGroup("SIGTERM");
        // The grace timer is cancelled once the process exits, so it does not hold the event loop.
        const exitedEarly = new AbortController();
        const graceOver = sleep(graceMs, undefined, { signal: exitedEarly.signal }).catch(() => undefined);
        await Promise.race([exitedPromise, graceOver]);
        exitedEarly.abort();
      }
      signalGroup("SIGKILL");
      stopReaper();
    },
    async kill() {
      signalGroup("SIGKILL");
      await exitedPromise;
      stopReaper();
    },
  };
}
