/**
 * Idle eviction of local workspaces: a workspace this worker holds, unused for `idleMs` and still
 * identical to its last snapshot in S3, is removed from the disk and its lock released; the next
 * claimWorkspace with the session's leaf (on any worker) restores it. A workspace with changes
 * that were never snapshotted is kept, whatever its age.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { WorkspaceSnapshots } from "../store/workspace-snapshots";
import { indexPathOf } from "../store/workspace-tree";
import { lockPathOf, type Workspace } from "../tools/workspace";

/** Marks the workspace as used now (the lock file's mtime is its last use). */
export async function touchWorkspace(workspace: Workspace): Promise<void> {
  const now = new Date();
  await fs.utimes(lockPathOf(workspace), now, now).catch(() => undefined);
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
      if (!(await options.snapshots.matchesLastSnapshot(workspace.dir))) continue;
      await fs.rm(workspace.dir, { recursive: true, force: true });
      await fs.rm(indexPathOf(workspace.dir), { force: true });
      await fs.rm(lockPathOf(workspace), { force: true });
      evicted.push(workspace.dir);
    }
  }
  return evicted;
}
