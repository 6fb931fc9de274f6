/**
 * Workspace placement: a session's workspace lives on one worker; its tool activities go to that
 * worker's own task queue. Claiming takes the workspace lock (or finds the live worker holding it)
 * and prepares the directory.
 */
import { Context } from "@temporalio/activity";
import { acquireWorkspaceLock, prepareWorkspace, WorkspaceBusyError, workspaceFor } from "../tools";
import type { ActivityDeps } from "./deps";
import { failpoint } from "./failpoints";
import { whileHeartbeating } from "./heartbeat";
import type { ClaimWorkspaceInput, ClaimWorkspaceResult } from "./types";

export function workspaceActivities({ workspaceRoot, workerTaskQueue }: ActivityDeps) {
  return {
    /** Heartbeats throughout: a copy or clone of the source may take a while. */
    claimWorkspace(input: ClaimWorkspaceInput): Promise<ClaimWorkspaceResult> {
      return whileHeartbeating(Context.current(), "claiming", () => claim(input));
    },
  };

  async function claim(input: ClaimWorkspaceInput): Promise<ClaimWorkspaceResult> {
    failpoint("claimWorkspace.start");
    const workspace = workspaceFor(workspaceRoot, input.tenantId, input.sessionId);
    try {
      // The lock's owner id is the holder's task queue, so other workers can route to it.
      await acquireWorkspaceLock(workspace, workerTaskQueue);
    } catch (error) {
      if (error instanceof WorkspaceBusyError && error.holder) return { taskQueue: error.holder.ownerId };
      throw error;
    }
    await prepareWorkspace(workspace, input.source);
    return { taskQueue: workerTaskQueue };
  }
}
