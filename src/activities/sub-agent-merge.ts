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
import type { MergeSubAgentWorkspaceInput, MergeSubAgentWorkspaceResult } from "../contracts/activities";
import {
  diffStates,
  type FlatState,
  flattenState,
  type PathChange,
  type PathEntry,
  sameEntry,
} from "../store/workspace-diff";
import { WorkspaceTooLargeError } from "../store/workspace-tree";
import { workspaceFor } from "../tools";
import {
  errorCode,
  openDirAt,
  PERMISSION_BITS,
  readDirAt,
  readLinkAt,
  WorkspaceFs,
  WorkspacePathError,
} from "../tools/workspace-fs";
import type { ActivityDeps } from "./deps";
import { failpoint } from "./failpoints";
import { whileHeartbeating } from "./heartbeat";
import { inCallWorkspace } from "./workspace-activities";

/** Paths a result names at most (the history carries them). */
const MAX_NAMED_PATHS = 20;

export function subAgentMergeActivity(deps: ActivityDeps) {
  const { snapshots, workspaceRoot, snapshotMaxBytes } = deps;
  return async function mergeSubAgentWorkspace(
    input: MergeSubAgentWorkspaceInput,
  ): Promise<MergeSubAgentWorkspaceResult> {
    const parent = { tenantId: input.tenantId, sessionId: input.sessionId };
    const ctx = Context.current();
    // A retry may find a file the crashed attempt removed before writing its new version.
    const retry = ctx.info.attempt > 1;
    return whileHeartbeating(ctx, "merging", async (): Promise<MergeSubAgentWorkspaceResult> => {
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
      // As for a tool call: this worker may not have the workspace, or only an old copy.
      // Children of one batch ending together merge one after the other.
      return inCallWorkspace(deps, parent, workspace, input.slot.parentId, () =>
        oneAtATime(workspace.dir, () => merge(workspace.dir, changes, before)),
      );
    });

    async function merge(
      dir: string,
      changes: PathChange[],
      before: FlatState,
    ): Promise<MergeSubAgentWorkspaceResult> {
      // Folders the merge creates, or turns from a file or link into one: nothing is below them yet.
      const created = new Set(
        changes
          .filter((change) => change.after?.type === "dir" && change.before?.type !== "dir")
          .map((change) => change.path),
      );
      return WorkspaceFs.with(dir, async (files) => {
        const pending: PathChange[] = [];
        const conflicts: string[] = [];
        for (const change of changes) {
          if (ancestors(change.path).some((folder) => created.has(folder))) {
            pending.push(change);
            continue;
          }
          const current = await currentEntry(files, change.path);
          if (current !== "unreadable" && sameEntry(current, change.after)) continue;
          const untouched =
            current !== "unreadable" &&
            (sameEntry(current, change.before) ||
              (retry && current === undefined && change.before?.type === "file"));
          if (!untouched) conflicts.push(change.path);
          // A folder that becomes a file or link must hold nothing but what the child removed from it.
          else if (
            change.before?.type === "dir" &&
            change.after !== undefined &&
            (await holdsOthers(files, change.path, before))
          )
            conflicts.push(change.path);
          else pending.push(change);
        }
        if (conflicts.length > 0) return { outcome: "conflict", ...named(conflicts) };
        for (const change of pending)
          await apply(files, change, (hash) => snapshots.getBlob(input.child, hash));
        failpoint("mergeSubAgentWorkspace.afterApply");
        const applied = named(changes.map((change) => change.path));
        try {
          await snapshots.snapshot(parent, dir, {
            afterEntryId: input.slot.id,
            afterSeq: input.slot.seq,
            maxBytes: snapshotMaxBytes,
          });
        } catch (error) {
          // The edits are in the workspace: say so, and that a worker taking it over would not have them.
          if (!(error instanceof WorkspaceTooLargeError)) throw error;
          return { outcome: "applied", ...applied, unrecorded: error.message };
        }
        return { outcome: "applied", ...applied };
      });
    }
  };
}

/** Merges into one workspace directory on this worker, in turn. */
const merging = new Map<string, Promise<unknown>>();
async function oneAtATime<T>(dir: string, work: () => Promise<T>): Promise<T> {
  const previous = merging.get(dir) ?? Promise.resolve();
  const current = previous.catch(() => undefined).then(work);
  merging.set(dir, current);
  try {
    return await current;
  } finally {
    if (merging.get(dir) === current) merging.delete(dir);
  }
}

/** `a/b/c` → `a`, `a/b`. */
function ancestors(path: string): string[] {
  const parts = path.split("/");
  return parts.slice(0, -1).map((_, index) => parts.slice(0, index + 1).join("/"));
}

/** Whether the folder at `path` holds a name the recorded state `before` did not have there. */
async function holdsOthers(files: WorkspaceFs, path: string, before: FlatState): Promise<boolean> {
  return files.locate(path, { links: "refuse", followLast: false }, async (located) => {
    const handle = await openDirAt(located.dirFd, located.name);
    try {
      const names = await readDirAt(handle.fd);
      return names.some((entry) => !before.has(`${path}/${entry.name}`));
    } finally {
      await handle.close();
    }
  });
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
    // A folder on the way that is missing, or is a file: nothing is at the path.
    if (errorCode(error) === "ENOENT" || errorCode(error) === "ENOTDIR") return undefined;
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
  // (A retry may find the path already gone.)
  if (before !== undefined && (await files.lstat(path, { links: "refuse" })) !== undefined)
    await files.remove(path);
  if (after?.type === "file") {
    const body = await blob(after.hash);
    const { handle } = await files.openForWrite(path, { links: "refuse", mode: after.mode, exclusive: true });
    try {
      await handle.writeFile(body);
      // The mode as recorded, not as the worker's umask leaves it.
      await handle.chmod(after.mode & PERMISSION_BITS);
    } finally {
      await handle.close();
    }
  } else if (after?.type === "symlink") await files.symlink(after.target, path);
}
