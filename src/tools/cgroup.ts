/**
 * Per-call control groups: the total memory and the number of processes of one sandboxed command,
 * where the worker may create cgroups below its own (cgroup v1 `pids` and `memory` hierarchies).
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

/** Where this process may create child cgroups, per controller. */
export type CgroupSupport =
  | { available: true; parents: Record<Controller, string> }
  | { available: false; reason: string };

/** This process's cgroup path in a v1 hierarchy, from /proc/self/cgroup (`N:controller:/path`). */
function ownPath(controller: Controller): string | undefined {
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
  const parents = {} as Record<Controller, string>;
  try {
    for (const controller of CONTROLLERS) {
      const own = ownPath(controller);
      if (own === undefined) throw new Error(`no cgroup v1 "${controller}" hierarchy`);
      const parent = path.join(CGROUP_V1_ROOT, controller, own);
      const probe = path.join(parent, `keel-probe-${process.pid}-${randomBytes(3).toString("hex")}`);
      mkdirSync(probe);
      rmdirSync(probe);
      parents[controller] = parent;
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
export function removeOrphanCgroups(parents: Record<Controller, string>): string[] {
  const removed: string[] = [];
  for (const parent of Object.values(parents)) {
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
  hits(): { processes: boolean; memory: boolean };
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
  const dirs = {
    pids: path.join(support.parents.pids, name),
    memory: path.join(support.parents.memory, name),
  };
  mkdirSync(dirs.pids);
  mkdirSync(dirs.memory);
  writeFileSync(path.join(dirs.pids, "pids.max"), String(limits.processes));
  writeFileSync(path.join(dirs.memory, "memory.limit_in_bytes"), String(limits.memoryBytes));
  return {
    procsFiles: [path.join(dirs.pids, "cgroup.procs"), path.join(dirs.memory, "cgroup.procs")],
    hits: () => ({
      // pids.events: "max N", N = forks refused at the limit.
      processes: readNumber(path.join(dirs.pids, "pids.events")) > 0,
      memory: readNumber(path.join(dirs.memory, "memory.failcnt")) > 0,
    }),
    async remove() {
      for (const dir of Object.values(dirs)) {
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
