/**
 * Process-group control for commands spawned with `detached: true` (each leads its own group,
 * pgid = pid). Killing the group reaches every background child the command started.
 */

import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/** Time between SIGTERM and SIGKILL when stopping a command. */
const KILL_GRACE_MS = 2000;
const POLL_MS = 25;

/** Sends `signal` to the whole group; false when the group no longer exists. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Non-zombie members of a process group, read from /proc (Linux). Zombies are dead processes
 * waiting to be reaped; where PID 1 does not reap orphans (some containers) they linger, and
 * `kill(-pgid, 0)` alone would report them as alive forever. Undefined without /proc.
 */
function livingGroupMembers(pgid: number): number[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return undefined;
  }
  const members: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    // Fields after the parenthesised command name: state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z") members.push(Number(entry));
  }
  return members;
}

/** True while any living process remains in the group. */
export function groupAlive(pgid: number): boolean {
  if (!signalGroup(pgid, 0)) return false;
  const living = livingGroupMembers(pgid);
  return living === undefined || living.length > 0;
}

async function waitUntilGone(pgid: number, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    if (!groupAlive(pgid)) return true;
    await sleep(POLL_MS);
  }
  return !groupAlive(pgid);
}

/**
 * Stops the whole group: SIGTERM, then SIGKILL for whatever is left after the grace period.
 * Resolves once no living member remains (or a short while after SIGKILL).
 */
export async function terminateGroup(pgid: number, graceMs = KILL_GRACE_MS): Promise<void> {
  if (!signalGroup(pgid, "SIGTERM")) return;
  if (await waitUntilGone(pgid, Date.now() + graceMs)) return;
  signalGroup(pgid, "SIGKILL");
  await waitUntilGone(pgid, Date.now() + 1000);
}
