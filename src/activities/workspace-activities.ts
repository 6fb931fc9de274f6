/**
 * Workspace placement and durability: a session's workspace lives on one worker; its tool
 * activities go to that worker's own task queue. Claiming takes the workspace lock (or finds the
 * live worker holding it) and prepares the directory — from the session's snapshot in S3 when
 * there is one for the leaf, otherwise from the run's source. After a tool batch the workflow
 * records the workspace (snapshotWorkspace); branch and fork move it to another entry's state
 * (restoreWorkspace). Both run on the workspace's worker queue.
 */
import * as fs from "node:fs/promises";
import { ApplicationFailure, Context } from "@temporalio/activity";
import type {
  ClaimWorkspaceInput,
  ClaimWorkspaceResult,
  RestoreWorkspaceInput,
  RestoreWorkspaceResult,
  SnapshotWorkspaceInput,
  SnapshotWorkspaceResult,
} from "../contracts/activities";
import { FailureType } from "../core/failure-types";
import type { SessionRef } from "../store/session-keys";
import type { SessionStore } from "../store/session-store";
import { snapshotAncestry, snapshotForAncestry } from "../store/workspace-lookup";
import type { AncestryStep } from "../store/workspace-snapshots";
import { WorkspaceTooLargeError } from "../store/workspace-tree";
import {
  acquireWorkspaceLock,
  prepareWorkspace,
  type Workspace,
  WorkspaceBusyError,
  WorkspaceSourceError,
  workspaceFor,
} from "../tools";
import { GitSourceRefusedError } from "../tools/git-source";
import type { ActivityDeps } from "./deps";
import { failpoint } from "./failpoints";
import { whileHeartbeating } from "./heartbeat";
import { closeMcpServersOf } from "./mcp-tools";
import { usingWorkspace } from "./workspace-eviction";
import { holdRestoredCopy, holdWorkspace, whileWorking } from "./workspace-holder";

/**
 * The snapshot lookup steps of `entryId` (see `snapshotAncestry`), from the session's stored
 * entries. An entry not (yet) readable is refused with UnknownEntry, or with `lenient` stands
 * alone (only its own snapshot can apply: a claim must not fail over an entry written moments
 * ago). `withBatchResults` as in `snapshotAncestry`.
 */
async function ancestryOf(
  store: SessionStore,
  ref: SessionRef,
  entryId: string,
  { lenient = false, withBatchResults = false }: { lenient?: boolean; withBatchResults?: boolean } = {},
): Promise<AncestryStep[]> {
  const { entries } = await store.readEntries(ref, { untilGap: true });
  const steps = snapshotAncestry(
    entries.map(({ entry }) => entry),
    entryId,
    { withBatchResults },
  );
  if (steps) return steps;
  if (lenient) return [entryId];
  throw ApplicationFailure.nonRetryable(`entry ${entryId} is not in this session`, FailureType.unknownEntry);
}

const exists = (dir: string): Promise<boolean> =>
  fs.stat(dir).then(
    (stats) => stats.isDirectory(),
    () => false,
  );

/** Restores in flight on this worker, per workspace directory (parallel calls share one). */
const restoresInFlight = new Map<string, Promise<string | undefined>>();

/**
 * Brings back the workspace of `ref` when it is not on this worker's disk (another Lambda
 * execution environment, a replaced worker, idle eviction), from the snapshot that applies to
 * `leafId`: its nearest snapshotted ancestor, in this session or the sessions it was forked from,
 * counting the stored results of the leaf's batch (a takeover in the middle of a batch).
 * Returns the entry whose snapshot was restored; undefined when the workspace is present or no
 * snapshot applies (the caller prepares it as new). Parallel callers for one workspace share a
 * single restore, so none replaces a directory another call is already working in.
 */
async function restoreMissingWorkspace(
  { store, snapshots }: Pick<ActivityDeps, "store" | "snapshots">,
  ref: SessionRef,
  workspace: Workspace,
  leafId: string,
): Promise<string | undefined> {
  const dir = workspace.dir;
  const pending = restoresInFlight.get(dir);
  // This call waits on another's restore: it heartbeats for itself meanwhile.
  if (pending) return whileHeartbeating(Context.current(), "restoring", () => pending);
  const restore = (async () => {
    if (await exists(dir)) return undefined;
    const found = await snapshotForAncestry(
      store,
      snapshots,
      ref,
      await ancestryOf(store, ref, leafId, { lenient: true, withBatchResults: true }),
    );
    if (!found) return undefined;
    await whileHeartbeating(Context.current(), "restoring", () =>
      snapshots.restore(found.from, found.record, dir, ref),
    );
    return found.record.afterEntryId;
  })();
  restoresInFlight.set(dir, restore);
  try {
    return await restore;
  } finally {
    restoresInFlight.delete(dir);
  }
}

/**
 * Runs `work` in `ref`'s workspace on this worker for a call that may land on a worker without it
 * (a tool call, a sub-agent's merge into its parent): marked in use (eviction leaves it) and
 * working (a claim does not remove it under the call); taken from the shared queue, where any
 * worker takes any call, held first (`holdWorkspace`: a stale copy is replaced), unless another
 * call of this process already works in the copy (`whileWorking`); a missing workspace is restored from the snapshot that applies to `leafId` (the call's
 * predecessor entry), or made empty when none does (a directory or git source is recorded when
 * claimed), never worked on as an empty directory by mistake; one restored or made here is locked
 * for this worker.
 */
export function inCallWorkspace<T>(
  deps: Pick<ActivityDeps, "store" | "snapshots" | "workerTaskQueue" | "sharedTaskQueue" | "mcp">,
  ref: SessionRef,
  workspace: Workspace,
  leafId: string | null | undefined,
  work: () => Promise<T>,
): Promise<T> {
  const { store, snapshots, workerTaskQueue } = deps;
  const hold = () =>
    whileHeartbeating(Context.current(), "holding", () =>
      holdWorkspace(snapshots.holders, ref, workspace, { onDiscard: () => closeMcpServersOf(deps, ref) }),
    );
  return usingWorkspace(workspace, () =>
    whileWorking(
      workspace,
      async () => {
        const restored = leafId
          ? await restoreMissingWorkspace({ store, snapshots }, ref, workspace, leafId)
          : undefined;
        if (restored !== undefined || (await prepareWorkspace(workspace)).created) {
          await acquireWorkspaceLock(workspace, workerTaskQueue);
        }
        return work();
      },
      fromSharedQueue(deps) ? hold : undefined,
    ),
  );
}

/** Whether the running activity was taken from the shared queue (any worker may have taken it). */
function fromSharedQueue(deps: Pick<ActivityDeps, "sharedTaskQueue">): boolean {
  return deps.sharedTaskQueue !== undefined && Context.current().info.taskQueue === deps.sharedTaskQueue;
}

/** What the workspace activities use of the worker's dependencies. */
export type WorkspaceDeps = Pick<
  ActivityDeps,
  | "store"
  | "snapshots"
  | "snapshotMaxBytes"
  | "workspaceRoot"
  | "workerTaskQueue"
  | "sandbox"
  | "gitHosts"
  | "sharedTaskQueue"
  | "mcp"
>;

export function workspaceActivities(deps: WorkspaceDeps) {
  const { store, snapshots, snapshotMaxBytes, workspaceRoot, workerTaskQueue, sandbox, gitHosts } = deps;
  return {
    /**
     * Heartbeats throughout: restoring a snapshot or copying the source may take a while. In use
     * for eviction, but not working: its hold may replace a stale copy.
     */
    claimWorkspace(input: ClaimWorkspaceInput): Promise<ClaimWorkspaceResult> {
      const workspace = workspaceFor(workspaceRoot, input.tenantId, input.sessionId);
      return usingWorkspace(workspace, () =>
        whileHeartbeating(Context.current(), "claiming", () => claim(input)),
      );
    },

    snapshotWorkspace(input: SnapshotWorkspaceInput): Promise<SnapshotWorkspaceResult> {
      failpoint("snapshotWorkspace.start");
      const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
      const workspace = workspaceFor(workspaceRoot, input.tenantId, input.sessionId);
      // On the shared queue any worker may take it: it records a current copy, brought here as
      // for a tool call (a stale one recorded at the batch's entry would undo the batch).
      const inCurrentCopy = <T>(work: () => Promise<T>) =>
        fromSharedQueue(deps)
          ? inCallWorkspace(deps, ref, workspace, input.afterEntryId, work)
          : inWorkspace(input, async () => {
              if (!(await exists(workspace.dir))) {
                throw ApplicationFailure.nonRetryable(
                  `the workspace of ${input.sessionId} is not on this worker`,
                  FailureType.workspaceMissing,
                );
              }
              return work();
            });
      return inCurrentCopy(async () => {
        try {
          const result = await whileHeartbeating(Context.current(), "snapshotting", () =>
            snapshots.snapshot(ref, workspace.dir, {
              afterEntryId: input.afterEntryId,
              afterSeq: input.afterSeq,
              maxBytes: snapshotMaxBytes,
              // A tool call may have recorded this entry before a parallel call changed files.
              replaceStale: true,
            }),
          );
          const { record } = result;
          return {
            adopted: result.adopted,
            root: record.root,
            files: record.files,
            bytes: record.bytes,
            uploadedObjects: result.uploadedObjects,
            uploadedBytes: result.uploadedBytes,
          };
        } catch (error) {
          if (error instanceof WorkspaceTooLargeError) {
            throw ApplicationFailure.nonRetryable(error.message, FailureType.workspaceTooLarge);
          }
          throw error;
        }
      });
    },

    restoreWorkspace(input: RestoreWorkspaceInput): Promise<RestoreWorkspaceResult> {
      failpoint("restoreWorkspace.start");
      return inWorkspace(input.ref, async () => {
        const from = input.from ?? input.ref;
        const found = await snapshotForAncestry(
          store,
          snapshots,
          from,
          await ancestryOf(store, from, input.entryId),
        );
        if (!found) return { restored: false };
        const { record } = found;
        const workspace = workspaceFor(workspaceRoot, input.ref.tenantId, input.ref.sessionId);
        const result = await whileHeartbeating(Context.current(), "restoring", () =>
          snapshots.restore(found.from, record, workspace.dir, input.ref),
        );
        // Whichever worker restored it (any, on the shared queue), its copy is now the current one.
        await holdRestoredCopy(snapshots.holders, input.ref, workspace);
        return {
          restored: true,
          snapshotEntryId: record.afterEntryId,
          files: result.files,
          bytes: result.bytes,
        };
      });
    },
  };

  /** Runs `work` with the session's workspace marked in use (idle eviction leaves it alone). */
  function inWorkspace<T>(ref: SessionRef, work: () => Promise<T>): Promise<T> {
    const workspace = workspaceFor(workspaceRoot, ref.tenantId, ref.sessionId);
    return usingWorkspace(workspace, () => whileWorking(workspace, work));
  }

  async function claim(input: ClaimWorkspaceInput): Promise<ClaimWorkspaceResult> {
    failpoint("claimWorkspace.start");
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const workspace = workspaceFor(workspaceRoot, input.tenantId, input.sessionId);
    const holdCopy = () =>
      holdWorkspace(snapshots.holders, ref, workspace, { onDiscard: () => closeMcpServersOf(deps, ref) });
    try {
      // The lock's owner id is the holder's task queue, so other workers can route to it.
      await acquireWorkspaceLock(workspace, workerTaskQueue);
    } catch (error) {
      if (error instanceof WorkspaceBusyError && error.holder) {
        // Another live process on this disk holds the lock: the copy is this disk's to check (the
        // lock's holder restores it when the copy was stale and is gone).
        if (error.holder.ownerId === workerTaskQueue) await holdCopy();
        return { taskQueue: error.holder.ownerId };
      }
      throw error;
    }
    const mayHaveSnapshot = !input.newSession || Context.current().info.attempt > 1;
    // A copy this disk kept from an earlier hold is stale if another worker held it since: it is
    // removed here and restored below like a missing one. A session this run just created has no
    // copy anywhere else: its first claim takes no epoch (the next claim on any disk adopts).
    if (mayHaveSnapshot) await holdCopy();
    const restoredFrom =
      input.leafId && mayHaveSnapshot
        ? await restoreMissingWorkspace({ store, snapshots }, ref, workspace, input.leafId)
        : undefined;
    if (restoredFrom !== undefined) {
      return { taskQueue: workerTaskQueue, sandbox: sandbox.isolation, restoredFrom };
    }
    const { created } = await prepareWorkspace(workspace, input.source, { gitHosts }).catch(
      (error: unknown) => {
        if (error instanceof GitSourceRefusedError || error instanceof WorkspaceSourceError)
          throw ApplicationFailure.nonRetryable(error.message, FailureType.workspaceSourceRefused);
        throw error;
      },
    );
    if (created && input.leafId && input.source && input.source.type !== "empty") {
      await recordSource(ref, workspace, input.leafId);
      failpoint("claimWorkspace.afterSource");
    }
    return { taskQueue: workerTaskQueue, sandbox: sandbox.isolation };
  }

  /**
   * Records a workspace just created from a directory or git source as the state at `leafId`
   * (the entry before the run's first batch), so a worker without it — another Lambda execution
   * environment, a replacement after a crash before the first batch that changed files — restores
   * the source's files instead of an empty folder. A failure is logged, never fails the claim:
   * the files are on this worker, and the first batch that changes files snapshots them again.
   */
  async function recordSource(ref: SessionRef, workspace: Workspace, leafId: string): Promise<void> {
    try {
      const { entries } = await store.readEntries(ref, { untilGap: true });
      const leaf = entries.find(({ entry }) => entry.id === leafId);
      if (!leaf) return;
      await snapshots.snapshot(ref, workspace.dir, {
        afterEntryId: leafId,
        afterSeq: leaf.seq,
        maxBytes: snapshotMaxBytes,
      });
    } catch (error) {
      Context.current().log.warn("the workspace source could not be recorded", {
        sessionId: ref.sessionId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
}
