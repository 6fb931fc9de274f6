/**
 * What a benchmark reads from Linux's /proc: CPU seconds of one process, the machine's busy share
 * over an interval, and a process's resident memory (sampled for its peak).
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

const CLOCK_TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());

/**
 * CPU seconds (user + system) the process `pid` has used so far, with those of its children it
 * has waited for (a worker's tool processes: sandbox and command), from /proc/<pid>/stat.
 */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces) start at the state, field 3:
  // utime, stime, cutime, cstime are fields 14–17.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (
    (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) /
    CLOCK_TICKS_PER_SECOND
  );
}

/** A `Vm*` line of /proc/<pid>/status in bytes. */
export function procStatusBytes(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

/** The machine's aggregate CPU counters (the `cpu` line of /proc/stat), in seconds. */
export interface MachineCpu {
  /** All CPUs' time, idle included. */
  total: number;
  /** Time spent idle or waiting for I/O. */
  idle: number;
  /** Time the hypervisor gave to other machines while this one wanted to run (counted as busy). */
  steal: number;
}

export function machineCpu(): MachineCpu {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
  // cpu user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user.
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((sum, value) => sum + value, 0);
  return {
    total: total / CLOCK_TICKS_PER_SECOND,
    idle: (ticks[3]! + ticks[4]!) / CLOCK_TICKS_PER_SECOND,
    steal: ticks[7]! / CLOCK_TICKS_PER_SECOND,
  };
}

/** Busy CPU seconds of the whole machine between two readings (every process, ours and others'). */
export function busySeconds(before: MachineCpu, after: MachineCpu): number {
  return after.total - before.total - (after.idle - before.idle);
}

/** Busy share of the machine between two readings: 0 (idle) … 1 (every CPU busy all the time). */
export function busyShare(before: MachineCpu, after: MachineCpu): number {
  const total = after.total - before.total;
  return total > 0 ? busySeconds(before, after) / total : 0;
}

export interface RssSampler {
  /** Stops sampling; returns the highest resident set seen, in bytes. */
  stop(): number;
}

/** Samples the resident set of `pid` every `intervalMs` until stopped. */
export function sampleRss(pid: number, intervalMs: number): RssSampler {
  let peak = procStatusBytes(pid, "VmRSS");
  const timer = setInterval(() => {
    peak = Math.max(peak, procStatusBytes(pid, "VmRSS"));
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, procStatusBytes(pid, "VmRSS"));
    },
  };
}

/** CPU use over a stretch of work: per measured process, and the machine's as a whole. */
export interface CpuWindow {
  /** CPU seconds of each measured process, in the order given. */
  cpuSeconds: number[];
  /** Busy share of the whole machine (all CPUs) during the work. */
  machineBusyShare: number;
  /** Busy share of the machine used by processes other than the measured ones, steal included. */
  othersShare: number;
  /** The part of `othersShare` the hypervisor took for other machines (steal). */
  stealShare: number;
}

/**
 * Runs `work` and reads the CPU the processes `pids` (each with every process below it: a server
 * that forks per connection counts as one) and the whole machine used meanwhile.
 */
export async function measureCpu<T>(
  pids: number[],
  work: () => Promise<T>,
): Promise<{ result: T; cpu: CpuWindow }> {
  const before = pids.map(treeCpuSeconds);
  const machineBefore = machineCpu();
  const result = await work();
  const machineAfter = machineCpu();
  const used = pids.map((pid, index) => treeCpuSeconds(pid) - before[index]!);
  const ours = used.reduce((sum, seconds) => sum + seconds, 0);
  const machineTotal = machineAfter.total - machineBefore.total;
  return {
    result,
    cpu: {
      cpuSeconds: used,
      machineBusyShare: busyShare(machineBefore, machineAfter),
      othersShare:
        machineTotal > 0 ? Math.max(0, busySeconds(machineBefore, machineAfter) - ours) / machineTotal : 0,
      stealShare: machineTotal > 0 ? (machineAfter.steal - machineBefore.steal) / machineTotal : 0,
    },
  };
}

/** Live child pids of `pid` (all its threads' children), from /proc/<pid>/task/<tid>/children. */
function childPids(pid: number): number[] {
  const children: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return children;
  }
  for (const task of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim();
      if (text) children.push(...text.split(/\s+/).map(Number));
    } catch {
      // the thread ended meanwhile
    }
  }
  return children;
}

/**
 * CPU seconds of `pid` and of every live process below it, each with the children it has waited
 * for: a server that forks per connection (PostgreSQL's backends, nginx's workers) read as one.
 * A descendant that exits between two readings moves into its parent's waited-for time, so the
 * difference of two readings stays whole. 0 for a process that is gone.
 */
export function treeCpuSeconds(pid: number): number {
  let total: number;
  try {
    total = cpuSeconds(pid);
  } catch {
    return 0;
  }
  for (const child of childPids(pid)) total += treeCpuSeconds(child);
  return total;
}
