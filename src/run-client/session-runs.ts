/**
 * Finding a session's run in Temporal and asking it, with bounded waits: the latest execution
 * under the session's workflow id, the agent run behind a maintenance task, the live run to
 * signal (pinned, so nothing lands on a run started meanwhile), a run's state and how it failed.
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  type Client,
  QueryNotRegisteredError,
  WorkflowFailedError,
  WorkflowNotFoundError,
} from "@temporalio/client";
import { ActivityFailure, ApplicationFailure } from "@temporalio/common";
import { temporal } from "@temporalio/proto";
import { type RunResult, type RunState, runWorkflowId, type SessionRef } from "../contracts/runs";
import { stateQuery } from "../workflows/definitions";
import { WorkflowType } from "../workflows/references";

/** How long a read of a run's state waits for its worker before the API says why it cannot. */
export const STATE_QUERY_WAIT_MS = 5_000;

/** How a workflow execution closed other than by returning: Temporal's own status, in API words. */
export type ClosedByFailure = "failed" | "terminated" | "timed_out" | "canceled";

/** Why a run's workflow closed without returning: the failure's class (or type) and message. */
interface RunFailure {
  status: ClosedByFailure;
  error: { type: string; message: string };
}

/** The session's latest run: its id, its own state (when it can be read) and how it failed, if it did. */
export interface LatestRun {
  runId: string;
  /** The run's state query; absent for a closed execution whose state could not be read. */
  state?: RunState;
  /** Set when Temporal reports the execution closed by failure, termination, timeout or cancel. */
  failure?: RunFailure;
  /** A completed execution whose state could not be read: its result, from its history. */
  result?: RunResult;
}

/** The maintenance workflows that run under a session's run id, by workflow type. */
const MAINTENANCE_KINDS = {
  [WorkflowType.branchSession]: "branch",
  [WorkflowType.compactSession]: "compact",
  [WorkflowType.labelSession]: "label",
} as const;
export type MaintenanceKind = (typeof MAINTENANCE_KINDS)[keyof typeof MAINTENANCE_KINDS];

/** A maintenance task (branch, compact, label): the session's latest execution when it is not a run. */
export interface MaintenanceTask {
  kind: MaintenanceKind;
  /** Temporal's status of the task's execution, lower case: running, completed, failed, … */
  status: string;
}

/** What the session's workflow id holds: its newest agent run, and the maintenance task after it. */
export interface SessionExecutions {
  run?: LatestRun;
  /** Set when the latest execution is a maintenance task rather than the run. */
  maintenance?: MaintenanceTask;
}

/**
 * What became of a signal to the session's run: `sent` to the open run, `not-live` (the latest
 * execution has closed, or is a maintenance task), `no-run` (the session never had a workflow).
 */
export type SignalOutcome = "sent" | "not-live" | "no-run";

/** The session's run when it is an open agent run, with a handle pinned to it. */
export type LiveRun =
  | { kind: "live"; runId: string; handle: Handle }
  | { kind: "not-live" }
  | { kind: "no-run" };

/** Memo key of a maintenance task: the run id of the agent run it follows (not secret: an id). */
export const FOLLOWS_RUN_MEMO = "keelFollowsRun";
/** The memo's value when the session had no agent run before the task. */
export const NO_RUN = "";

export type Handle = ReturnType<Client["workflow"]["getHandle"]>;
export type Description = Awaited<ReturnType<Handle["describe"]>>;

const CLOSED_BY_FAILURE: Partial<Record<string, ClosedByFailure>> = {
  FAILED: "failed",
  TERMINATED: "terminated",
  TIMED_OUT: "timed_out",
  CANCELLED: "canceled",
};

/** An open run did not answer its state query (no worker polling yet, or the query timed out). */
export class RunNotAnsweringError extends Error {
  constructor(
    runId: string,
    options: { cause: unknown },
    /** Why, as far as Temporal can tell (no worker polling the run's task queue, or a slow one). */
    readonly why = "its worker did not answer",
  ) {
    super(`run ${runId} is not answering right now: ${why}`, options);
    this.name = "RunNotAnsweringError";
  }
}

export class SessionRuns {
  constructor(private readonly client: Client) {}

  /** The session's newest agent run and, when a maintenance task ran after it, that task. */
  async executions(ref: SessionRef): Promise<SessionExecutions> {
    const latest = await this.describeLatest(ref);
    if (latest === undefined) return {};
    if (latest.type === WorkflowType.agentRun) return { run: await this.runOf(ref, latest) };
    const kind = MAINTENANCE_KINDS[latest.type as keyof typeof MAINTENANCE_KINDS];
    const maintenance = kind ? { kind, status: latest.status.name.toLowerCase() } : undefined;
    const runId = await this.runIdBehind(ref, latest);
    const run =
      runId !== undefined ? await this.runOf(ref, await this.pinned(ref, runId).describe()) : undefined;
    return { ...(run ? { run } : {}), ...(maintenance ? { maintenance } : {}) };
  }

  /** Temporal's description of the latest execution under the session's workflow id, if any. */
  async describeLatest(ref: SessionRef): Promise<Description | undefined> {
    try {
      return await this.client.workflow.getHandle(runWorkflowId(ref)).describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    }
  }

  /** The run id of the session's newest agent run: the latest execution, or the one behind a maintenance task. */
  async newestRunId(ref: SessionRef): Promise<string | undefined> {
    const latest = await this.describeLatest(ref);
    if (latest === undefined) return undefined;
    return latest.type === WorkflowType.agentRun ? latest.runId : this.runIdBehind(ref, latest);
  }

  /** A handle on one execution (never following to a newer one). */
  pinned(ref: SessionRef, runId: string) {
    return this.client.workflow.getHandle(runWorkflowId(ref), runId, { followRuns: false });
  }

  /**
   * The session's run when Temporal describes it as an open agent run, with a handle pinned to
   * it, so nothing sent through it lands on a run started meanwhile. Reads nothing from the
   * workflow itself (no query), so it needs no live worker.
   */
  async liveRun(ref: SessionRef): Promise<LiveRun> {
    const workflowId = runWorkflowId(ref);
    let description: Description;
    try {
      description = await this.client.workflow.getHandle(workflowId).describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return { kind: "no-run" };
      throw error;
    }
    // A maintenance task (branch, compact, label) holding the id is not a run to signal.
    if (description.status.name !== "RUNNING" || description.type !== WorkflowType.agentRun) {
      return { kind: "not-live" };
    }
    const handle = this.client.workflow.getHandle(workflowId, description.runId);
    return { kind: "live", runId: description.runId, handle };
  }

  /**
   * Signals the session's run when Temporal describes it as an open agent run. Reads nothing
   * from the workflow itself (no query), so it needs no live worker.
   */
  async signalLive(ref: SessionRef, send: (handle: Handle) => Promise<void>): Promise<SignalOutcome> {
    const live = await this.liveRun(ref);
    if (live.kind !== "live") return live.kind;
    return this.sendLive(live.handle, send);
  }

  /** Sends through a pinned handle; `not-live` when the run closed since it was described. */
  async sendLive(handle: Handle, send: (handle: Handle) => Promise<void>): Promise<SignalOutcome> {
    try {
      await send(handle);
      return "sent";
    } catch (error) {
      // It closed between the description and the send.
      if (error instanceof WorkflowNotFoundError) return "not-live";
      throw error;
    }
  }

  /**
   * Asks the run a query about something just signalled until it has seen it (`ask` answers null
   * while it has not: the query overtook the signal's workflow task). Undefined when no worker
   * answers by `deadline` (all down, redeploying) or its code predates the query.
   */
  async askUntilSeen<T>(deadline: number, ask: () => Promise<T | null>): Promise<T | undefined> {
    while (Date.now() < deadline) {
      const answer = await this.client.withDeadline(deadline, ask).catch(() => undefined);
      if (answer === undefined) return undefined;
      if (answer !== null) return answer;
      await sleep(50);
    }
    return undefined;
  }

  /**
   * A query of an open run, bounded: Temporal holds a query whose worker is gone until the call's
   * own deadline (minutes). After STATE_QUERY_WAIT_MS without an answer it looks at the pollers of
   * the run's task queue: none at all (every worker is down) ends the wait at once; some (a live
   * worker, or one that died within the last minute) get one more wait, since a live worker takes
   * a dead one's cached run over once the sticky queue times out. Then RunNotAnsweringError, which
   * says which it was. A QueryNotRegisteredError (older code) passes through.
   */
  async queryOpenRun<T>(description: Description, ask: () => Promise<T>): Promise<T> {
    const queue = description.taskQueue;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.client.withDeadline(Date.now() + STATE_QUERY_WAIT_MS, ask);
      } catch (error) {
        if (error instanceof QueryNotRegisteredError) throw error;
        const pollers = await this.pollerCount(queue);
        if (pollers !== 0 && attempt < 2) continue;
        const waited = (attempt * STATE_QUERY_WAIT_MS) / 1000;
        const why =
          pollers === 0
            ? `no worker is polling the run's task queue "${queue}": start one (\`keel dev\` restarts a worker that died)`
            : pollers === undefined
              ? `its worker did not answer within ${waited} s`
              : `its worker did not answer within ${waited} s (${pollers} worker(s) polled the run's task queue "${queue}" in the last minute; one that died still shows for a minute)`;
        throw new RunNotAnsweringError(description.runId, { cause: error }, why);
      }
    }
  }

  /**
   * The agent run a maintenance task followed: the run id its memo records (read with the task's
   * own description, so it is current; NO_RUN: none), else — a task started without the memo, by
   * an older API — the newest one Temporal lists.
   */
  private async runIdBehind(ref: SessionRef, task: Description): Promise<string | undefined> {
    const recorded = task.memo?.[FOLLOWS_RUN_MEMO];
    if (recorded === NO_RUN) return undefined;
    return typeof recorded === "string" ? recorded : this.newestRunIdListed(ref);
  }

  /**
   * The newest agent run under the session's workflow id, from Temporal's visibility store (runs
   * never overlap, and the list puts an open execution first, then the most recently closed). A
   * run that closed an instant ago may not be listed yet (visibility is eventually consistent).
   */
  private async newestRunIdListed(ref: SessionRef): Promise<string | undefined> {
    const query = `WorkflowId = "${runWorkflowId(ref)}" AND WorkflowType = "${WorkflowType.agentRun}"`;
    for await (const execution of this.client.workflow.list({ query, pageSize: 1 })) return execution.runId;
    return undefined;
  }

  /** The run described by `description`: its state query and, when it closed by failure, how. */
  private async runOf(ref: SessionRef, description: Description): Promise<LatestRun> {
    const closedBy = CLOSED_BY_FAILURE[description.status.name];
    // Pinned to the described run: a new run may start meanwhile, and its result is not this one's.
    const run = this.pinned(ref, description.runId);
    let result: RunResult | undefined;
    const queried = (
      closedBy === undefined && description.status.name === "RUNNING"
        ? this.queryOpenRun(description, () => run.query(stateQuery))
        : run.query(stateQuery)
    ).catch(async (error: unknown) => {
      if (error instanceof RunNotAnsweringError) throw error;
      // A closed execution answers queries only through a worker replaying it (no worker may be
      // running, or its history may not replay); its failure is what matters then, so a state
      // that cannot be read is left out.
      if (closedBy !== undefined) return undefined;
      // A completed one has its result in its history: no worker needed.
      if (description.status.name === "COMPLETED") {
        result = await run.result();
        return undefined;
      }
      // Any other execution that cannot answer now is not an error of the request: retry (503).
      throw new RunNotAnsweringError(description.runId, { cause: error });
    });
    const [state, failure] = await Promise.all([queried, closedBy ? failureOf(run, closedBy) : undefined]);
    return {
      runId: description.runId,
      ...(state !== undefined ? { state } : {}),
      ...(failure !== undefined ? { failure } : {}),
      ...(result !== undefined ? { result } : {}),
    };
  }

  /** Workers Temporal saw polling `taskQueue` for workflow tasks lately; undefined when it cannot say. */
  private async pollerCount(taskQueue: string): Promise<number | undefined> {
    try {
      const { pollers } = await this.client.withDeadline(Date.now() + STATE_QUERY_WAIT_MS, () =>
        this.client.workflowService.describeTaskQueue({
          namespace: this.client.options.namespace,
          taskQueue: { name: taskQueue },
          taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        }),
      );
      return pollers?.length ?? 0;
    } catch {
      return undefined;
    }
  }
}

/** The failure a closed execution ended with, read from its close event. */
async function failureOf(handle: Handle, status: ClosedByFailure): Promise<RunFailure> {
  try {
    await handle.result();
  } catch (error) {
    if (!(error instanceof WorkflowFailedError)) throw error;
    // An activity failure wraps what the activity raised: that is the error worth showing.
    const root =
      error.cause instanceof ActivityFailure && error.cause.cause ? error.cause.cause : error.cause;
    if (root) {
      const type = root instanceof ApplicationFailure && root.type ? root.type : root.name;
      return { status, error: { type, message: root.message } };
    }
  }
  return { status, error: { type: status, message: `the workflow closed as ${status}` } };
}
