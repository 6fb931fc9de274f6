/**
 * Idle eviction of local workspaces: a workspace this worker holds, unused for `idleMs` and still
 * identical to its last snapshot in S3, is removed from the disk and its lock released; the next
 * claimWorkspace with the session's leaf (on any worker) restores it, and so does a tool call of
 * a run that still routes to this worker (executeTool restores a missing workspace from the
 * snapshot of its assistant entry). A workspace with changes that were never snapshotted, or one
 * a tool call or snapshot of this process is using, is kept, whatever its age.
 */
import { renameSync, rmSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { WorkspaceSnapshots } from "../store/workspace-snapshots";
import { indexPathOf } from "../store/workspace-tree";
import { lockPathOf, type Workspace } from "../tools/workspace";
import { removeTree } from "../tools/workspace-fs";
import { siblingPathOf } from "../tools/workspace-siblings";
import { whileCounted } from "./use-counts";

/** Marks the workspace as used now (the lock file's mtime is its last use). */
async function touchWorkspace(workspace: Workspace): Promise<void> {
  const now = new Date();
  await fs.utimes(lockPathOf(workspace), now, now).catch(() => undefined);
}

/** Workspaces (directories) activities of this process are using, with how many use each. */
const inUse = new Map<string, number>();

/**
 * Runs `work` with the workspace marked in use: eviction skips it however long `work` takes (a
 * command may run longer than the idle period).
 * The mark is set synchronously, before the first await, so an eviction that has not yet moved
 * the directory away sees it (see `evictIdleWorkspaces`); the last use is set when `work` ends
 * (while it runs, the mark keeps the workspace).
 */
export async function usingWorkspace<T>(workspace: Workspace, work: () => Promise<T>): Promise<T> {
  try {
    return await whileCounted(inUse, workspace.dir, work);
  } finally {
    await touchWorkspace(workspace);
  }
}

export interface EvictionOptions {
  root: string;
  /** This worker's lock owner id (its task queue): only workspaces it holds are evicted. */
  ownerId: string;
  idleMs: number;
  snapshots: Pick<WorkspaceSnapshots, "matchesLastSnapshot">;
  now?: number;
}

async function holderOf(lockPath: string): Promise<{ ownerId?: string; mtimeMs: number } | undefined> {
  try {
    const [raw, stats] = await Promise.all([fs.readFile(lockPath, "utf8"), fs.stat(lockPath)]);
    const parsed = JSON.parse(raw) as { ownerId?: unknown };
    return {
      ownerId: typeof parsed.ownerId === "string" ? parsed.ownerId : undefined,
      mtimeMs: stats.mtimeMs,
    };
  } catch {
    return undefined;
  }
}

/** Evicts every idle, fully snapshotted workspace this worker holds; returns their directories. */
export async function evictIdleWorkspaces(options: EvictionOptions): Promise<string[]> {
  const now = options.now ?? Date.now();
  const evicted: string[] = [];
  const tenants = await fs.readdir(options.root, { withFileTypes: true }).catch(() => []);
  for (const tenant of tenants) {
    if (!tenant.isDirectory()) continue;
    const tenantDir = path.join(options.root, tenant.name);
    for (const session of await fs.readdir(tenantDir, { withFileTypes: true })) {
      // Workspaces are plain directories; staging and replaced siblings carry a dot in their name.
      if (!session.isDirectory() || session.name.includes(".")) continue;
      const workspace: Workspace = { dir: path.join(tenantDir, session.name) };
      const holder = await holderOf(lockPathOf(workspace));
      if (holder?.ownerId !== options.ownerId || now - holder.mtimeMs < options.idleMs) continue;
      if (inUse.has(workspace.dir)) continue;
      if (!(await options.snapshots.matchesLastSnapshot(workspace.dir))) continue;
      // Checked again and moved aside with no await in between: a call that starts from now on
      // finds no workspace and restores it; one that started during the scan keeps it.
      if (inUse.has(workspace.dir)) continue;
      const aside = siblingPathOf(workspace.dir, "evicted");
      try {
        renameSync(workspace.dir, aside);
      } catch {
        continue;
      }
      // Index and lock go in the same synchronous step: a restore starting next writes new ones.
      rmSync(indexPathOf(workspace.dir), { force: true });
      rmSync(lockPathOf(workspace), { force: true });
      // Through held descriptors: a link inside is unlinked, never followed, even if a process
      // that still has the workspace mounted swaps a folder for one while it goes.
      await removeTree(aside);
      evicted.push(workspace.dir);
    }
  }
  return evicted;
}
