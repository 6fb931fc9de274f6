/**
 * Siblings of a workspace directory that host-side code makes while it moves a copy in or out:
 * staging for a new or restored copy, and old copies moved aside before they are removed. Each is
 * named `{workspace}.{purpose}-{host tag}-{pid}-{random}`, so one that a crashed process left
 * behind is recognised and removed: made on this host by a process that is gone, and unchanged for
 * an hour. A sibling of a live process (this one included: its background removals) or of another
 * host is never touched. The hour covers what a pid cannot tell: containers that share a disk and
 * a host name but not their pids, where another container's live restore looks like a dead pid.
 */
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import { hostname } from "node:os";
import * as path from "node:path";
import { errorCode, removeTree } from "./workspace-fs";

/** Why a sibling exists: a copy being built (`staging`, `restore`) or an old one on its way out. */
export type SiblingPurpose = "staging" | "restore" | "replaced" | "stale" | "evicted";

/** Eight hex digits of the host name's hash: host names may hold dots, which siblings' names must not. */
const hostTag = createHash("sha256").update(hostname()).digest("hex").slice(0, 8);

const SIBLING_NAME =
  /^[A-Za-z0-9][A-Za-z0-9_-]*\.(?:staging|restore|replaced|stale|evicted)-([0-9a-f]{8})-(\d+)-[0-9a-f]+$/;

/** A fresh sibling path of `dir` for `purpose`, carrying this host and process. */
export function siblingPathOf(dir: string, purpose: SiblingPurpose): string {
  return `${dir}.${purpose}-${hostTag}-${process.pid}-${randomBytes(6).toString("hex")}`;
}

/** True when the process `pid` of this host is running (EPERM: it runs as another user). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === "EPERM";
  }
}

/** When this process started: a sibling with its pid but older was left by an earlier life (a container's pid 1). */
const PROCESS_STARTED_MS = Date.now() - process.uptime() * 1000;

export interface SweepOptions {
  /** Siblings changed more recently than this are kept, whatever their pid says (default: an hour). */
  minAgeMs?: number;
  /** When this process started (default: its real start). */
  processStartedMs?: number;
}

/**
 * Removes the siblings under `root` (`{root}/{tenant}/{name}`, a worker's layout) that processes
 * of this host left when they died mid-move (`sweepFolder` on each tenant's folder). Returns their
 * paths. Never throws.
 */
export async function sweepLeftoverSiblings(root: string, options: SweepOptions = {}): Promise<string[]> {
  const swept: string[] = [];
  const tenants = await fs.readdir(root, { withFileTypes: true }).catch(() => []);
  for (const tenant of tenants)
    if (tenant.isDirectory()) swept.push(...(await sweepFolder(path.join(root, tenant.name), options)));
  return swept;
}

/**
 * Removes the siblings directly in `folder` (a runner's root: `{root}/{session}`) that processes
 * of this host left when they died mid-move, through held descriptors (a link inside is unlinked,
 * never followed). Returns their paths. Never throws: a sibling that cannot be removed is tried
 * again next time.
 */
export async function sweepFolder(folder: string, options: SweepOptions = {}): Promise<string[]> {
  const { minAgeMs = 60 * 60_000, processStartedMs = PROCESS_STARTED_MS } = options;
  const swept: string[] = [];
  const names = await fs.readdir(folder).catch((): string[] => []);
  for (const name of names) {
    const match = SIBLING_NAME.exec(name);
    if (!match || match[1] !== hostTag) continue;
    const sibling = path.join(folder, name);
    const stats = await fs.lstat(sibling).catch(() => undefined);
    // ctime: a rename (moving a copy aside) sets it, where mtime may be far older.
    const changedMs = stats ? Math.max(stats.ctimeMs, stats.mtimeMs) : Date.now();
    if (Date.now() - changedMs < minAgeMs) continue;
    const pid = Number(match[2]);
    const left = pid === process.pid ? changedMs < processStartedMs : !isProcessAlive(pid);
    if (!left) continue;
    try {
      await removeTree(sibling);
      swept.push(sibling);
    } catch {
      // Left for the next sweep (a permission changed under it, an I/O error).
    }
  }
  return swept;
}
