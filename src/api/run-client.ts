/**
 * The client side of runs: delivering messages (starting a run when none is live), abort,
 * approvals, state and events. Used by the HTTP API, the CLI and tests.
 */
import {
  type Client,
  QueryNotRegisteredError,
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from "@temporalio/client";
import { ApplicationFailure } from "@temporalio/common";
import type { AgentEvent } from "../core/events";
import type { agentRun } from "../workflows/agent-run";
import {
  abortSignal,
  approveSignal,
  DeliveryRefusal,
  deliverUpdate,
  eventsQuery,
  stateQuery,
} from "../workflows/definitions";
import type {
  BranchSessionInput,
  BranchSessionResult,
  CompactSessionInput,
  CompactSessionResult,
} from "../workflows/session-maintenance";
import {
  type ApprovalDecision,
  type DeliverRequest,
  type DeliverResult,
  type RunSettings,
  type RunState,
  runWorkflowId,
  type SessionRef,
} from "../workflows/types";

/** A delivery refused by the run (busy, queue full, ended, invalid): `type` says which. */
export class DeliveryRefusedError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
    this.name = "DeliveryRefusedError";
  }
}

/** The session has a live run (or another maintenance task); retry when it is idle. */
export class SessionBusyError extends Error {
  constructor(readonly ref: SessionRef) {
    super(`session ${ref.sessionId} is busy with a run`);
    this.name = "SessionBusyError";
  }
}

export interface Delivered extends DeliverResult {
  workflowId: string;
  runId: string;
}

/** A message racing a run's last moments may meet it ended; it is then delivered to a new run. */
const ENDED_RUN_RETRIES = 5;

export class RunClient {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  /**
   * Delivers `request` to the session's live run, or starts a run with it (update-with-start):
   * one run at most is live per session. Throws DeliveryRefusedError when the run refuses.
   */
  async deliver(ref: SessionRef, request: DeliverRequest, settings: RunSettings): Promise<Delivered> {
    const workflowId = runWorkflowId(ref);
    for (let attempt = 0; ; attempt++) {
      const startWorkflowOperation = new WithStartWorkflowOperation<typeof agentRun>("agentRun", {
        workflowId,
        taskQueue: this.taskQueue,
        args: [{ ...ref, settings }],
        workflowIdConflictPolicy: "USE_EXISTING",
        staticSummary: summaryLine(request.text),
      });
      try {
        const result = await this.client.workflow.executeUpdateWithStart(deliverUpdate, {
          args: [request],
          startWorkflowOperation,
        });
        const handle = await startWorkflowOperation.workflowHandle();
        const { runId } = await handle.describe();
        return { ...result, workflowId, runId };
      } catch (error) {
        const refusal = refusalOf(error);
        const retry = refusal?.type === DeliveryRefusal.ended || metMaintenanceTask(error);
        if (retry && attempt < ENDED_RUN_RETRIES) {
          await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
          continue;
        }
        if (refusal) throw new DeliveryRefusedError(refusal.type ?? DeliveryRefusal.invalid, refusal.message);
        throw error;
      }
    }
  }

  /** Compacts an idle session now (an LLM summary); SessionBusyError while a run is live. */
  compact(
    ref: SessionRef,
    options: Omit<CompactSessionInput, keyof SessionRef>,
  ): Promise<CompactSessionResult> {
    return this.exclusive<CompactSessionResult>(ref, "compactSession", { ...ref, ...options });
  }

  /** Moves an idle session's leaf to `entryId`, optionally summarizing the branch left behind. */
  branch(ref: SessionRef, options: Omit<BranchSessionInput, keyof SessionRef>): Promise<BranchSessionResult> {
    return this.exclusive<BranchSessionResult>(ref, "branchSession", { ...ref, ...options });
  }

  /** Runs a maintenance workflow under the session's run id, so it never overlaps a run. */
  private async exclusive<R>(ref: SessionRef, workflowType: string, input: unknown): Promise<R> {
    try {
      return await this.client.workflow.execute(workflowType, {
        workflowId: runWorkflowId(ref),
        taskQueue: this.taskQueue,
        args: [input],
        workflowIdConflictPolicy: "FAIL",
        staticSummary: `${workflowType} ${ref.sessionId}`,
      });
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) throw new SessionBusyError(ref);
      throw error;
    }
  }

  /** Asks the live run to stop. Returns false when no run is live. */
  async abort(ref: SessionRef, reason: string): Promise<boolean> {
    return this.signalLive(ref, (handle) => handle.signal(abortSignal, reason));
  }

  async approve(ref: SessionRef, decision: ApprovalDecision): Promise<boolean> {
    return this.signalLive(ref, (handle) => handle.signal(approveSignal, decision));
  }

  /**
   * State of the session's latest run; undefined when it never had one, or when its latest
   * execution was a maintenance task (branch, compact) rather than a run.
   */
  async state(ref: SessionRef): Promise<RunState | undefined> {
    try {
      return await this.client.workflow.getHandle(runWorkflowId(ref)).query(stateQuery);
    } catch (error) {
      if (error instanceof WorkflowNotFoundError || error instanceof QueryNotRegisteredError)
        return undefined;
      throw error;
    }
  }

  async events(ref: SessionRef, afterSeq: number): Promise<AgentEvent[]> {
    try {
      return await this.client.workflow.getHandle(runWorkflowId(ref)).query(eventsQuery, afterSeq);
    } catch (error) {
      if (error instanceof WorkflowNotFoundError || error instanceof QueryNotRegisteredError) return [];
      throw error;
    }
  }

  handle(ref: SessionRef) {
    return this.client.workflow.getHandle(runWorkflowId(ref));
  }

  private async signalLive(
    ref: SessionRef,
    send: (handle: ReturnType<Client["workflow"]["getHandle"]>) => Promise<void>,
  ): Promise<boolean> {
    const handle = this.client.workflow.getHandle(runWorkflowId(ref));
    try {
      const description = await handle.describe();
      if (description.status.name !== "RUNNING") return false;
      await send(handle);
      return true;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    }
  }
}

function refusalOf(error: unknown): ApplicationFailure | undefined {
  const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
  if (
    cause instanceof ApplicationFailure &&
    Object.values<string>(DeliveryRefusal).includes(cause.type ?? "")
  ) {
    return cause;
  }
  return undefined;
}

/**
 * The update reached a branch or compact task holding the session's workflow id: such a task
 * has no `deliver` handler, so the update waits for it to finish and is then rejected. Sending
 * again starts a run.
 */
function metMaintenanceTask(error: unknown): boolean {
  const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
  return cause instanceof ApplicationFailure && cause.message.startsWith("No registered handler for update");
}

function summaryLine(text: string): string {
  const first = text.split("\n", 1)[0] ?? "";
  return first.length > 120 ? `${first.slice(0, 117)}...` : first;
}
