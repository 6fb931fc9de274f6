/**
 * Where the session's workspace lives for this run: the task queue of the worker holding it
 * (claimed once per run) and the one way work of that worker follows the workspace to another
 * worker when the holder is gone.
 */
import { PATCHES, takesPatch } from "../patches";
import { claim, isScheduleToStartTimeout, MAX_WORKSPACE_MOVES } from "./activity-options";
import type { RunContext } from "./context";
import { publishDetails } from "./lifecycle";

/**
 * Runs `work` (an activity of the workspace's worker) on the worker holding the session's
 * workspace. When no worker started it in time (that worker died or is stuck: a schedule-to-start
 * timeout, which Temporal does not retry), the workspace moves: it is claimed again, restored
 * from its last snapshot on the claiming worker, and `work` runs there; at most
 * MAX_WORKSPACE_MOVES times, then the timeout is thrown. `mayMove` is asked before each move
 * (runs recorded before a kind of work moved keep failing as they did).
 */
export async function onWorkspaceWorker<T>(
  ctx: RunContext,
  work: (queue: string) => Promise<T>,
  mayMove: () => boolean = () => true,
): Promise<T> {
  for (let moves = 0; ; moves++) {
    const queue = await workspaceTaskQueue(ctx);
    // The claim this attempt used: another call of the batch may have moved the workspace since.
    const used = ctx.workspaceQueue;
    try {
      return await work(queue);
    } catch (error) {
      if (isScheduleToStartTimeout(error) && moves < MAX_WORKSPACE_MOVES && mayMove()) {
        // A newer claim is kept: the workspace moves once, not once per call that met the dead
        // worker (a second move could land elsewhere and leave the first mover's changes behind).
        if (ctx.workspaceQueue === used || !takesPatch(PATCHES.workspaceMovesOnce, ctx.runVersion))
          ctx.workspaceQueue = undefined;
        continue;
      }
      throw error;
    }
  }
}

/**
 * The task queue of the worker holding the session's workspace. One claim serves every call of
 * the run, parallel calls included (they share the claim in flight); a failed claim is forgotten,
 * so the next call claims again.
 */
export async function workspaceTaskQueue(ctx: RunContext): Promise<string> {
  const { run } = ctx;
  // The newest stored entry before the batch (the assistant message): a worker without the
  // workspace restores the snapshot of it or of its nearest snapshotted ancestor.
  // A forked sub-agent's workspace is its parent's at the fork point until it records its own.
  const leafId = ctx.forkedAt ?? run.batch[0]?.slot.parentId ?? run.cursor?.leafId ?? undefined;
  const claimWorkspace = () => {
    // A session this run created has no snapshot to look for, until its first claim (which may
    // record the source's files) has been tried; a fork's is its parent's.
    const newSession = ctx.unclaimedNewSession === true && ctx.forkedAt === undefined;
    ctx.unclaimedNewSession = false;
    return claim
      .claimWorkspace({
        ...run.ref,
        source: run.settings.workspace,
        ...(leafId ? { leafId } : {}),
        ...(newSession ? { newSession } : {}),
      })
      .then((result) => {
        if (result.sandbox === "off" && !run.unsandboxed) {
          run.unsandboxed = true;
          publishDetails(ctx);
        }
        return result.taskQueue;
      });
  };
  if (takesPatch(PATCHES.claimWorkspaceOnce, ctx.runVersion)) {
    ctx.workspaceQueue ??= claimWorkspace();
    try {
      return await ctx.workspaceQueue;
    } catch (error) {
      ctx.workspaceQueue = undefined;
      throw error;
    }
  }
  // Runs recorded before the claim was shared: every call that finds no claimed queue claims.
  if (ctx.workspaceQueue) return ctx.workspaceQueue;
  const queue = await claimWorkspace();
  ctx.workspaceQueue = Promise.resolve(queue);
  return queue;
}
