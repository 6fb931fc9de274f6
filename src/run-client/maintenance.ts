/**
 * Maintenance of an idle session under its run's workflow id (so it never overlaps a run): the
 * branch, compact and label workflows, and deleting the histories of its closed executions.
 */
import {
  type Client,
  isGrpcServiceError,
  WorkflowExecutionAlreadyStartedError,
  type WorkflowResultType,
} from "@temporalio/client";
import { runWorkflowId, type SessionRef } from "../contracts/runs";
import { type Workflows, WorkflowType } from "../workflows/references";
import type {
  BranchSessionInput,
  BranchSessionResult,
  CompactSessionInput,
  CompactSessionResult,
  LabelSessionInput,
  LabelSessionResult,
} from "../workflows/session-maintenance";
import { tenantPriority } from "./fairness";
import { FOLLOWS_RUN_MEMO, NO_RUN, type SessionRuns } from "./session-runs";

/** gRPC's NOT_FOUND status code, as Temporal's service answers it. */
const GRPC_NOT_FOUND = 5;

/** The session has a live run (or another maintenance task); retry when it is idle. */
export class SessionBusyError extends Error {
  constructor(readonly ref: SessionRef) {
    super(`session ${ref.sessionId} is busy with a run`);
    this.name = "SessionBusyError";
  }
}

type MaintenanceWorkflow = "branchSession" | "compactSession" | "labelSession";

export class Maintenance {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly runs: SessionRuns,
  ) {}

  /** Compacts an idle session now (an LLM summary); SessionBusyError while a run is live. */
  compact(
    ref: SessionRef,
    options: Omit<CompactSessionInput, keyof SessionRef>,
  ): Promise<CompactSessionResult> {
    return this.exclusive("compactSession", ref, { ...ref, ...options });
  }

  /** Moves an idle session's leaf to `entryId`, optionally summarizing the branch left behind. */
  branch(ref: SessionRef, options: Omit<BranchSessionInput, keyof SessionRef>): Promise<BranchSessionResult> {
    return this.exclusive("branchSession", ref, { ...ref, ...options });
  }

  /** Appends a label entry to an idle session (sets or clears the label of `targetId`). */
  label(ref: SessionRef, options: Omit<LabelSessionInput, keyof SessionRef>): Promise<LabelSessionResult> {
    return this.exclusive("labelSession", ref, { ...ref, ...options });
  }

  /**
   * Deletes the histories of the closed executions under the session's workflow id (its runs and
   * maintenance tasks): Temporal's copy of what they did, events included. The server deletes
   * asynchronously, and its list of executions is eventually consistent, so an execution that
   * closed a moment ago may be left; session deletion records a tombstone for that reason.
   * Returns how many executions were asked to be deleted.
   */
  async deleteHistories(ref: SessionRef): Promise<number> {
    const workflowId = runWorkflowId(ref);
    const runIds = new Set<string>();
    const latest = await this.runs.describeLatest(ref);
    if (latest && latest.status.name !== "RUNNING") runIds.add(latest.runId);
    // Ids are validated ([A-Za-z0-9_-] and "/"), so the workflow id needs no escaping.
    for await (const execution of this.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      if (execution.status.name !== "RUNNING") runIds.add(execution.runId);
    }
    for (const runId of runIds) {
      try {
        await this.client.workflowService.deleteWorkflowExecution({
          namespace: this.client.options.namespace,
          workflowExecution: { workflowId, runId },
        });
      } catch (error) {
        // Deleted already (by an earlier request, or the namespace's retention).
        if (!isGrpcServiceError(error) || error.code !== GRPC_NOT_FOUND) throw error;
      }
    }
    return runIds.size;
  }

  /**
   * Runs a maintenance workflow under the session's run id, so it never overlaps a run. The task
   * records in its memo which agent run it follows, so reads right after it (`executions`,
   * `events`) find that run through Temporal's strongly consistent description instead of its
   * eventually consistent list of executions.
   */
  private async exclusive<W extends MaintenanceWorkflow>(
    workflow: W,
    ref: SessionRef,
    input: Parameters<Workflows[W]>[0],
  ): Promise<WorkflowResultType<Workflows[W]>> {
    const workflowType = WorkflowType[workflow];
    const follows = await this.runs.newestRunId(ref);
    try {
      return await this.client.workflow.execute<Workflows[W]>(workflowType, {
        workflowId: runWorkflowId(ref),
        taskQueue: this.taskQueue,
        args: [input] as Parameters<Workflows[W]>,
        workflowIdConflictPolicy: "FAIL",
        priority: tenantPriority(ref.tenantId),
        staticSummary: `${workflowType} ${ref.sessionId}`,
        memo: { [FOLLOWS_RUN_MEMO]: follows ?? NO_RUN },
      });
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) throw new SessionBusyError(ref);
      throw error;
    }
  }
}
