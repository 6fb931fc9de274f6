/**
 * A sub-agent's edits carried back into its parent's workspace when its `task` call ends
 * (docs/tools.md, "task"). The child worked in a fork of the parent's workspace, restored from the
 * snapshot taken at the call (`forkedAt`); its last snapshot is its final state. The paths that
 * differ between the two are applied to the parent's workspace, on the worker holding it — unless
 * another call of the parent's batch changed one of them meanwhile (then nothing is applied and
 * the result names the paths: the child's session keeps its edits). The merged workspace is
 * snapshotted at the call's result before the result is stored, so a parent worker that dies
 * after the merge loses nothing.
 *
 * Idempotent: a path already holding the child's version counts as applied, so a retry after a
 * crash mid-merge finishes the job. Every read and write goes through the workspace file layer,
 * refusing links on the way: nothing in the parent's workspace can redirect it.
 */
import { createHash } from "node:crypto";
import { rmdir } from "node:fs/promises";
import { Context } from "@temporalio/activity";
import {
  diffStates,
  flattenState,
  type PathChange,
  type PathEntry,
  sameEntry,
} from "../store/workspace-diff";
import { acquireWorkspaceLock, prepareWorkspace, workspaceFor } from "../tools";
import { errorCode, readLinkAt, WorkspaceFs, WorkspacePathError } from "../tools/workspace-fs";
import type { ActivityDeps } from "./deps";
import { failpoint } from "./failpoints";
import { whileHeartbeating } from "./heartbeat";
import type { MergeSubAgentWorkspaceInput, MergeSubAgentWorkspaceResult } from "./types";
import { restoreMissingWorkspace } from "./workspace-activities";
import { usingWorkspace } from "./workspace-eviction";

/** Paths a result names at most (the history carries them). */
const MAX_NAMED_PATHS = 20;

export function subAgentMergeActivity({
  store,
  snapshots,
  workspaceRoot,
  workerTaskQueue,
  snapshotMaxBytes,
}: ActivityDeps) {
  return async function mergeSubAgentWorkspace(
    input: MergeSubAgentWorkspaceInput,
  ): Promise<MergeSubAgentWorkspaceResult> {
    const parent = { tenantId: input.tenantId, sessionId: input.sessionId };
    const [base, final] = await Promise.all([
      snapshots.getRecord(parent, input.forkedAt),
      snapshots.newestRecord(input.child),
    ]);
    if (!final || (base && final.root === base.root)) return { outcome: "unchanged" };
    if (!base)
      return { outcome: "unavailable", reason: "the workspace was not recorded when the agent started" };
    const [before, after] = await Promise.all([
      flattenState(snapshots, parent, base.root),
      flattenState(snapshots, input.child, final.root),
    ]);
    const changes = diffStates(before, after);
    if (changes.length === 0) return { outcome: "unchanged" };

    const workspace = workspaceFor(workspaceRoot, input.tenantId, input.sessionId);
    const ctx = Context.current();
    return usingWorkspace(workspace, async () => {
      // As for a tool call: this worker may not have the workspace; it is the state of the call's
      // predecessor entry then, never an empty directory.
      const restored = input.slot.parentId
        ? await restoreMissingWorkspace({ store, snapshots }, parent, workspace, input.slot.parentId)
        : undefined;
      if (restored !== undefined || (await prepareWorkspace(workspace)).created)
        await acquireWorkspaceLock(workspace, workerTaskQueue);
      return whileHeartbeating(ctx, "merging", () => merge(workspace.dir));
    });

    async function merge(dir: string): Promise<MergeSubAgentWorkspaceResult> {
      return WorkspaceFs.with(dir, async (files) => {
        const pending: PathChange[] = [];
        const conflicts: string[] = [];
        for (const change of changes) {
          const current = await currentEntry(files, change.path);
          if (current !== "unreadable" && sameEntry(current, change.after)) continue;
          if (current !== "unreadable" && sameEntry(current, change.before)) pending.push(change);
          else conflicts.push(change.path);
        }
        if (conflicts.length > 0) return { outcome: "conflict", ...named(conflicts) };
        for (const change of pending)
          await apply(files, change, (hash) => snapshots.getBlob(input.child, hash));
        failpoint("mergeSubAgentWorkspace.afterApply");
        await snapshots.snapshot(parent, dir, {
          afterEntryId: input.slot.id,
          afterSeq: input.slot.seq,
          maxBytes: snapshotMaxBytes,
        });
        return { outcome: "applied", ...named(changes.map((change) => change.path)) };
      });
    }
  };
}

const named = (paths: string[]) => ({ count: paths.length, paths: paths.slice(0, MAX_NAMED_PATHS) });

/**
 * What `path` holds in the workspace now, compared as the snapshots record it; `unreadable` when
 * a link or something other than a file, link or directory is on the way (never followed).
 */
async function currentEntry(files: WorkspaceFs, path: string): Promise<PathEntry | undefined | "unreadable"> {
  try {
    return await files.locate(path, { links: "refuse", followLast: false }, async (located) => {
      const stats = located.stats;
      if (!stats) return undefined;
      if (stats.isDirectory()) return { type: "dir", mode: stats.mode & 0o777 };
      if (stats.isSymbolicLink()) {
        const target = await readLinkAt(located.dirFd, located.name);
        return target === undefined ? "unreadable" : { type: "symlink", target };
      }
      if (!stats.isFile()) return "unreadable";
      const body = await files.readFile(path, { links: "refuse" });
      return {
        type: "file",
        hash: createHash("sha256").update(body).digest("hex"),
        mode: stats.mode & 0o777,
      };
    });
  } catch (error) {
    if (error instanceof WorkspacePathError) return "unreadable";
    throw error;
  }
}

/** Makes `change.path` hold `change.after` (removing what is there first unless it is a directory kept). */
async function apply(
  files: WorkspaceFs,
  change: PathChange,
  blob: (hash: string) => Promise<Buffer>,
): Promise<void> {
  const { path, before, after } = change;
  if (after === undefined && before?.type === "dir") {
    // Its removed content went first (deepest first); what is left there another call added.
    await files.locate(path, { links: "refuse", followLast: false }, async (located) =>
      rmdir(`/proc/self/fd/${located.dirFd}/${located.name}`).catch((error: unknown) => {
        if (errorCode(error) !== "ENOTEMPTY" && errorCode(error) !== "ENOENT") throw error;
      }),
    );
    return;
  }
  if (after?.type === "dir") {
    if (before !== undefined && before.type !== "dir") await files.remove(path);
    await files.mkdirp(path);
    return;
  }
  if (before !== undefined) await files.remove(path);
  if (after?.type === "file")
    await files.writeFile(path, await blob(after.hash), {
      links: "refuse",
      mode: after.mode,
      exclusive: true,
    });
  else if (after?.type === "symlink") await files.symlink(after.target, path);
}
