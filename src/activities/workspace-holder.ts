/**
 * A disk works on a session's workspace copy only while it is the current one (store
 * workspace-holders.ts): a worker that held the workspace in an earlier run, before another
 * worker changed it, must not pick up its own old files again.
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { SessionRef } from "../store/session-keys";
import type { StoredHolder, WorkspaceHolders } from "../store/workspace-holders";
import { indexPathOf } from "../store/workspace-tree";
import type { Workspace } from "../tools/workspace";
import { removeTree } from "../tools/workspace-fs";
import { siblingPathOf } from "../tools/workspace-siblings";
import { whileCounted } from "./use-counts";

/** Where a disk keeps the holder epoch it last took for a workspace (beside it, like its lock). */
export const holderEpochPathOf = (workspace: Workspace): string => `${workspace.dir}.holder`;

/** Attempts to take a workspace other disks keep taking at the same moment (with backoff). */
const TAKE_ATTEMPTS = 6;
const TAKE_BACKOFF_MS = 50;

/** Holds in flight on this process, per workspace directory (parallel callers share one). */
const holdsInFlight = new Map<string, Promise<void>>();
/** Calls of this process working in each copy (`whileWorking`): a copy is never replaced under them. */
const working = new Map<string, number>();

/**
 * A stale copy a call of this process is still working in: it is not removed under the call, and
 * the claim fails (Temporal retries it; it may land on another worker).
 */
class StaleCopyInUseError extends Error {
  constructor(dir: string) {
    super(`the copy of the workspace at ${dir} is stale and a call of this worker still works in it`);
    this.name = "StaleCopyInUseError";
  }
}

export interface HoldOptions {
  /** Called after a stale copy was removed (MCP servers started in it must go with it). */
  onDiscard?: () => Promise<void>;
}

/**
 * Makes this disk the holder of `ref`'s workspace before work uses the copy in `workspace`:
 * - the stored epoch is the one this disk last took: the copy (or its absence) is current;
 * - neither S3 nor this disk has an epoch (a new session, or copies made before epochs existed):
 *   the copy, if any, is adopted as it is;
 * - otherwise this disk takes the workspace (a new epoch, written only if no other disk took it
 *   meanwhile) and removes its copy, if any, with its snapshot index: the caller then restores
 *   the workspace from its snapshot, or prepares it from its source, as a worker that never held
 *   it would. A stale copy a call of this process works in is not removed: StaleCopyInUseError.
 * Throws when S3 cannot be read or written (the activity retries).
 */
export function holdWorkspace(
  holders: WorkspaceHolders,
  ref: SessionRef,
  workspace: Workspace,
  options: HoldOptions = {},
): Promise<void> {
  const pending = holdsInFlight.get(workspace.dir);
  if (pending) return pending;
  const hold = takeWhen(
    holders,
    ref,
    workspace,
    (stored, local) => {
      if (stored?.epoch !== undefined && stored.epoch === local) return "keep";
      if (stored === undefined && local === undefined) return "adopt";
      if (working.has(workspace.dir)) throw new StaleCopyInUseError(workspace.dir);
      return "replace";
    },
    options.onDiscard,
  ).finally(() => holdsInFlight.delete(workspace.dir));
  holdsInFlight.set(workspace.dir, hold);
  return hold;
}

/**
 * Records that the copy in `workspace` was just replaced with a state read from S3 (a branch's
 * restore): it becomes the current one, whichever disk held the workspace before.
 */
export async function holdRestoredCopy(holders: WorkspaceHolders, ref: SessionRef, workspace: Workspace) {
  await takeWhen(holders, ref, workspace, () => "adopt");
}

type Decision = "keep" | "adopt" | "replace";

/**
 * Reads the stored and the local epoch, asks `decide`, and unless it says keep, takes the
 * workspace (retrying from the read when another disk took it meanwhile); on replace, removes the
 * copy and calls `onDiscard` before the new epoch is written beside it (a crash in between leaves
 * an old epoch, and the next hold takes the workspace again instead of trusting a half-removed
 * copy).
 */
async function takeWhen(
  holders: WorkspaceHolders,
  ref: SessionRef,
  workspace: Workspace,
  decide: (stored: StoredHolder | undefined, local: string | undefined) => Decision,
  onDiscard?: () => Promise<void>,
): Promise<void> {
  for (let attempt = 1; attempt <= TAKE_ATTEMPTS; attempt++) {
    const [stored, local] = await Promise.all([holders.read(ref), readLocalEpoch(workspace)]);
    const decision = decide(stored, local);
    if (decision === "keep") return;
    const epoch = await holders.take(ref, stored);
    if (epoch === undefined) {
      // Another disk took it, and its write may not be readable at once on every S3 server.
      await sleep(TAKE_BACKOFF_MS * 2 ** (attempt - 1));
      continue;
    }
    if (decision === "replace") {
      await discardCopy(workspace);
      await onDiscard?.();
    }
    await writeLocalEpoch(workspace, epoch);
    return;
  }
  throw new Error(
    `the workspace of ${ref.sessionId} was taken by other workers ${TAKE_ATTEMPTS} times in a row`,
  );
}

/**
 * Runs `work` counted as working in the copy at `workspace.dir`. `hold` (a call on the shared
 * queue, which any worker may take) runs first, unless a call of this process already works in
 * the copy: the calls of one parallel batch that land on several workers each work on the copy
 * they started on.
 */
export async function whileWorking<T>(
  workspace: Workspace,
  work: () => Promise<T>,
  hold?: () => Promise<void>,
): Promise<T> {
  if (hold && !working.has(workspace.dir)) await hold();
  return whileCounted(working, workspace.dir, work);
}

/** Moves the copy at `workspace.dir` aside (removed in the background) and drops its snapshot index. */
async function discardCopy(workspace: Workspace): Promise<void> {
  await fs.rm(indexPathOf(workspace.dir), { force: true });
  const aside = siblingPathOf(workspace.dir, "stale");
  try {
    await fs.rename(workspace.dir, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  // Through held descriptors (links inside are unlinked, never followed), and not awaited: a large
  // tree must not hold up the call or its heartbeats. One left by a crash is only disk space.
  void removeTree(aside).catch(() => undefined);
}

async function readLocalEpoch(workspace: Workspace): Promise<string | undefined> {
  try {
    const parsed: unknown = JSON.parse(await fs.readFile(holderEpochPathOf(workspace), "utf8"));
    const epoch = (parsed as { epoch?: unknown }).epoch;
    return typeof epoch === "string" ? epoch : undefined;
  } catch {
    // Absent or torn: this disk holds no known epoch.
    return undefined;
  }
}

async function writeLocalEpoch(workspace: Workspace, epoch: string): Promise<void> {
  const target = holderEpochPathOf(workspace);
  // The tenant's folder: a call on the shared queue may be the first of its tenant on this disk.
  await fs.mkdir(path.dirname(target), { recursive: true });
  const staging = `${target}.${randomBytes(6).toString("hex")}`;
  await fs.writeFile(staging, JSON.stringify({ epoch }), { flag: "wx" });
  await fs.rename(staging, target);
}
