/**
 * Per-call control groups: the total memory and the number of processes of one sandboxed command,
 * where the worker may create cgroups below its own (cgroup v1 `pids` and `memory` hierarchies),
 * and the CPU time of all its processes together where the `cpuacct` hierarchy allows it too.
 *
 * Why not rlimits alone: RLIMIT_NPROC is not enforced for processes whose real user is root
 * outside the sandbox (the kernel exempts INIT_USER), which is what a root worker's sandbox is,
 * and RLIMIT_AS bounds each process, not their sum. Where cgroups cannot be created (most
 * containers, cgroup v2 without delegation), the rlimits still apply; docs/tools.md says what
 * each deployment gets.
 */

import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const CGROUP_V1_ROOT = "/sys/fs/cgroup";
const CONTROLLERS = ["pids", "memory"] as const;
type Controller = (typeof CONTROLLERS)[number];
/** Used where available: per-call cgroups work without it (RLIMIT_CPU still bounds each process). */
const CPU_CONTROLLER = "cpuacct";
/** How often a call's CPU time is read against its limit. */
const CPU_POLL_MS = 250;

/** Where this process may create child cgroups, per controller. */
export type CgroupSupport =
  | { available: true; parents: Record<Controller, string> & { cpuacct?: string } }
  | { available: false; reason: string };

/** This process's cgroup path in a v1 hierarchy, from /proc/self/cgroup (`N:controller:/path`). */
function ownPath(controller: string): string | undefined {
  const lines = readFileSync("/proc/self/cgroup", "utf8").split("\n");
  for (const line of lines) {
    const [, controllers, cgroupPath] = line.split(":");
    if (controllers?.split(",").includes(controller) && cgroupPath !== undefined) return cgroupPath;
  }
  return undefined;
}

let detected: CgroupSupport | undefined;

/** Whether per-call cgroups can be made here (checked once by creating and removing one). */
export function cgroupSupport(): CgroupSupport {
  if (detected) return detected;
  const parents = {} as Record<Controller, string> & { cpuacct?: string };
  const usableParent = (controller: string): string => {
    const own = ownPath(controller);
    if (own === undefined) throw new Error(`no cgroup v1 "${controller}" hierarchy`);
    const parent = path.join(CGROUP_V1_ROOT, controller, own);
    const probe = path.join(parent, `keel-probe-${process.pid}-${randomBytes(3).toString("hex")}`);
    mkdirSync(probe);
    rmdirSync(probe);
    return parent;
  };
  try {
    for (const controller of CONTROLLERS) parents[controller] = usableParent(controller);
    try {
      parents.cpuacct = usableParent(CPU_CONTROLLER);
    } catch {
      // No per-call CPU accounting here: RLIMIT_CPU alone bounds each process.
    }
    detected = { available: true, parents };
    removeOrphanCgroups(parents);
  } catch (error) {
    detected = { available: false, reason: error instanceof Error ? error.message : String(error) };
  }
  return detected;
}

const CALL_CGROUP = /^keel-call-(\d+)-[0-9a-f]+$/;

const processAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/**
 * Removes call cgroups left by workers that died mid-call (their pid is gone); the kernel only
 * lets an empty cgroup be removed, so one still holding processes stays. Returns the removed paths.
 */
export function removeOrphanCgroups(parents: Partial<Record<string, string>>): string[] {
  const removed: string[] = [];
  for (const parent of Object.values(parents)) {
    if (parent === undefined) continue;
    for (const name of readdirSync(parent)) {
      const match = CALL_CGROUP.exec(name);
      if (!match || processAlive(Number(match[1]))) continue;
      try {
        rmdirSync(path.join(parent, name));
        removed.push(path.join(parent, name));
      } catch {
        // Not empty (or already gone): left as it is.
      }
    }
  }
  return removed;
}

/** One call's cgroups: join them before exec'ing the sandbox, read what was hit, remove them. */
export interface CallCgroup {
  /** `cgroup.procs` files the starting process writes its pid to. */
  procsFiles: string[];
  /** Which limits were hit during the call. */
  hits(): { processes: boolean; memory: boolean; cpu: boolean };
  /**
   * Calls `onExceeded` once when the call's processes together have used more than `seconds` of
   * CPU time (read every CPU_POLL_MS, so a call may overshoot by that much per core); returns the
   * function that stops watching. Without a cpuacct cgroup it watches nothing.
   */
  watchCpu(seconds: number, onExceeded: () => void): () => void;
  /** Removes the cgroups once their processes are gone (retries briefly). */
  remove(): Promise<void>;
}

const readNumber = (file: string): number => {
  try {
    return Number(readFileSync(file, "utf8").trim().split(/\s+/).pop());
  } catch {
    return 0;
  }
};

/** Creates a call's cgroups with `processes` and `memoryBytes` limits; undefined where unsupported. */
export function createCallCgroup(limits: { processes: number; memoryBytes: number }): CallCgroup | undefined {
  const support = cgroupSupport();
  if (!support.available) return undefined;
  const name = `keel-call-${process.pid}-${randomBytes(6).toString("hex")}`;
  const cpuDir = support.parents.cpuacct && path.join(support.parents.cpuacct, name);
  const dirs = [path.join(support.parents.pids, name), path.join(support.parents.memory, name)];
  const [pidsDir = "", memoryDir = ""] = dirs;
  if (cpuDir) dirs.push(cpuDir);
  for (const dir of dirs) mkdirSync(dir);
  writeFileSync(path.join(pidsDir, "pids.max"), String(limits.processes));
  writeFileSync(path.join(memoryDir, "memory.limit_in_bytes"), String(limits.memoryBytes));
  let cpuExceeded = false;
  return {
    procsFiles: dirs.map((dir) => path.join(dir, "cgroup.procs")),
    hits: () => ({
      // pids.events: "max N", N = forks refused at the limit.
      processes: readNumber(path.join(pidsDir, "pids.events")) > 0,
      memory: readNumber(path.join(memoryDir, "memory.failcnt")) > 0,
      cpu: cpuExceeded,
    }),
    watchCpu(seconds, onExceeded) {
      if (!cpuDir) return () => {};
      const usage = path.join(cpuDir, "cpuacct.usage"); // nanoseconds
      const timer = setInterval(() => {
        if (readNumber(usage) <= seconds * 1e9) return;
        cpuExceeded = true;
        clearInterval(timer);
        onExceeded();
      }, CPU_POLL_MS);
      return () => clearInterval(timer);
    },
    async remove() {
      for (const dir of dirs) {
        for (let attempt = 0; attempt < 50; attempt++) {
          try {
            await fs.rmdir(dir);
            break;
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code === "ENOENT") break;
            await sleep(40);
          }
        }
      }
    },
  };
}
