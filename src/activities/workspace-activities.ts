/**
 * Workspace placement: a session's workspace lives on one worker; its tool activities go to that
 * worker's own task queue. Claiming takes the workspace lock (or finds the live worker holding it)
 * and prepares the directory.
 */
import { acquireWorkspaceLock, prepareWorkspace, WorkspaceBusyError, workspaceFor } from "../tools";
import type { ActivityDeps } from "./deps";
import type { ClaimWorkspaceInput, ClaimWorkspaceResult } from "./types";

export function workspaceActivities({ workspaceRoot, workerTaskQueue, sandbox }: ActivityDeps) {
  return {
    async claimWorkspace(input: ClaimWorkspaceInput): Promise<ClaimWorkspaceResult> {
      const workspace = workspaceFor(workspaceRoot, input.tenantId, input.sessionId);
      try {
        // The lock's owner id is the holder's task queue, so other workers can route to it.
        await acquireWorkspaceLock(workspace, workerTaskQueue);
      } catch (error) {
        if (error instanceof WorkspaceBusyError && error.holder) return { taskQueue: error.holder.ownerId };
        throw error;
      }
      await prepareWorkspace(workspace, input.source);
      return { taskQueue: workerTaskQueue, sandbox: sandbox.isolation };
    },
  };
}
