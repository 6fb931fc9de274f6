/**
 * The client side of runs: delivering messages (starting a run when none is live), abort,
 * approvals, state and events. Used by the HTTP API, the CLI and tests.
 */

import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type Client,
  isGrpcServiceError,
  QueryNotRegisteredError,
  WithStartWorkflowOperation,
  WorkflowContinuedAsNewError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
} from "@temporalio/client";
import { ActivityFailure, ApplicationFailure } from "@temporalio/common";
import { temporal } from "@temporalio/proto";
import type { AgentEvent } from "../core/events";
import type { McpToolList } from "../mcp/types";
import type { agentRun } from "../workflows/agent-run";
import {
  abortSignal,
  abortStateQuery,
  approveSignal,
  DeliveryRefusal,
  deliverSignal,
  deliverUpdate,
  deliveryQuery,
  eventsQuery,
  mcpToolsQuery,
  stateQuery,
} from "../workflows/definitions";
import { runAttributes } from "../workflows/search-attributes";
import type {
  BranchSessionInput,
  BranchSessionResult,
  CompactSessionInput,
  CompactSessionResult,
  LabelSessionInput,
  LabelSessionResult,
} from "../workflows/session-maintenance";
import {
  type AbortRequest,
  type AbortResult,
  type ApprovalDecision,
  DEFAULT_ABORT_REASON,
  type DeliverRequest,
  type DeliverResult,
  RUN_VERSION,
  type RunResult,
  type RunSettings,
  type RunState,
  runWorkflowId,
  type SessionRef,
  startedStatus,
} from "../workflows/types";
import { type RunFeed, RunFeeds } from "./run-feed";

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

/**
 * How a delivery went: the run's answer, or `pending` when the message reached a live run whose
 * workers did not answer within ANSWER_WAIT_MS (recorded by the server; the run takes it
 * when a worker picks it up).
 */
export type Delivered = { workflowId: string; runId: string } & (DeliverResult | { delivery: "pending" });

export interface DeliverOptions {
  /**
   * Id of the delivery: the update id when the message starts a run, the `deliverMessage` signal's
   * delivery id when it reaches a live run. A run takes an id once, so a retry with the same id gets
   * the first delivery's answer instead of delivering again (the API derives it from tenant +
   * `Idempotency-Key`). Default: a random id.
   */
  deliveryId?: string;
  /** How long to wait for a live run's answer before answering `pending`. */
  answerWaitMs?: number;
}

/**
 * What became of a signal to the session's run: `sent` to the open run, `not-live` (the latest
 * execution has closed, or is a maintenance task), `no-run` (the session never had a workflow).
 */
export type SignalOutcome = "sent" | "not-live" | "no-run";

/**
 * What became of an abort: the run `answered` (it is stopping, and names the messages it will not
 * read), or did not answer in time and the abort was `signalled` instead (recorded by the server;
 * the run stops when a worker picks it up), or there was nothing to abort.
 */
export type AbortOutcome =
  | ({ kind: "answered"; runId: string } & AbortResult)
  | { kind: "signalled"; runId: string }
  | { kind: "not-live" }
  | { kind: "no-run" };

export interface AbortOptions {
  /** How long to wait for the run's answer before answering `signalled`. */
  answerWaitMs?: number;
}

/**
 * How long an abort or a delivery to a live run waits for the run's answer. A polling worker
 * answers in well under a second; with every worker down the wait ends here and the caller is
 * told the message was recorded but not answered, so it is answered within seconds either way.
 */
export const ANSWER_WAIT_MS = 2_000;
/** How long a read of a run's state waits for its worker before the API says why it cannot. */
export const STATE_QUERY_WAIT_MS = 5_000;

/** How a workflow execution closed other than by returning: Temporal's own status, in API words. */
export type ClosedByFailure = "failed" | "terminated" | "timed_out" | "canceled";

/** Why a run's workflow closed without returning: the failure's class (or type) and message. */
export interface RunFailure {
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
  branchSession: "branch",
  compactSession: "compact",
  labelSession: "label",
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

type Handle = ReturnType<Client["workflow"]["getHandle"]>;
type Description = Awaited<ReturnType<Handle["describe"]>>;

const CLOSED_BY_FAILURE: Partial<Record<string, ClosedByFailure>> = {
  FAILED: "failed",
  TERMINATED: "terminated",
  TIMED_OUT: "timed_out",
  CANCELLED: "canceled",
};

/** gRPC's NOT_FOUND status code, as Temporal's service answers it. */
const GRPC_NOT_FOUND = 5;

/** Workflow type of a run (maintenance tasks run under the same workflow id with other types). */
const RUN_WORKFLOW_TYPE = "agentRun";

/** Memo key of a maintenance task: the run id of the agent run it follows (not secret: an id). */
export const FOLLOWS_RUN_MEMO = "keelFollowsRun";
/** The memo's value when the session had no agent run before the task. */
const NO_RUN = "";

/**
 * A message may find the session's workflow id held by a run that is just closing, or by a
 * maintenance task: it is tried again (with growing pauses) this many times before `RunBusy`.
 */
const ENDED_RUN_RETRIES = 5;

export class RunClient {
  private feeds?: RunFeeds;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  /**
   * Starts a run with `request` (update-with-start), or, when the session's run is live, delivers it
   * to that run by signal and reads the run's answer by query: one run at most is live per session.
   * Throws DeliveryRefusedError when the run refuses. Never sends an update to a live run: one that
   * reaches it while its worker is dead can leave a history the SDK cannot replay.
   */
  async deliver(
    ref: SessionRef,
    request: DeliverRequest,
    settings: RunSettings,
    options: DeliverOptions = {},
  ): Promise<Delivered> {
    const deliveryId = options.deliveryId ?? `keel-delivery-${randomUUID()}`;
    if (options.deliveryId !== undefined) {
      const earlier = await this.deliveredToClosedRun(ref, deliveryId);
      if (earlier) return earlier;
    }
    for (let attempt = 0; ; attempt++) {
      const answer =
        (await this.startWith(ref, request, settings, deliveryId)) ??
        (await this.deliverLive(ref, request, deliveryId, options.answerWaitMs ?? ANSWER_WAIT_MS));
      if (answer.kind === "delivered") return answer.delivered;
      // The run is ending (or a maintenance task holds the session): it is then started anew.
      if (answer.kind === "retry" && attempt < ENDED_RUN_RETRIES) {
        await sleep(200 * (attempt + 1));
        continue;
      }
      throw answer.refusal;
    }
  }

  /**
   * The answer a closed run gave to this delivery id, read from its result (no worker needed): a
   * retry whose idempotency record was lost after the run closed is answered, not delivered again.
   * A start's update id Temporal answers itself; a message a live run took by signal only the run
   * remembers. A guard, not a gate: when Temporal cannot describe the session now, the delivery
   * goes on (it fails there too if Temporal is down; if not, only a retry whose record was lost
   * after its run closed could deliver twice).
   */
  private async deliveredToClosedRun(ref: SessionRef, deliveryId: string): Promise<Delivered | undefined> {
    try {
      const latest = await this.describeLatest(ref);
      if (latest?.type !== RUN_WORKFLOW_TYPE || latest.status.name !== "COMPLETED") return undefined;
      const result: RunResult = await this.pinned(ref, latest.runId).result();
      const earlier = result.deliveries?.find((delivery) => delivery.updateId === deliveryId)?.result;
      return earlier && { ...earlier, workflowId: runWorkflowId(ref), runId: latest.runId };
    } catch {
      return undefined;
    }
  }

  /**
   * Starts the session's run with the delivery (update-with-start, which fails when an execution
   * holds the workflow id). Undefined when one does: the delivery then goes to it.
   */
  private async startWith(
    ref: SessionRef,
    request: DeliverRequest,
    settings: RunSettings,
    deliveryId: string,
  ): Promise<DeliveryAttempt | undefined> {
    const workflowId = runWorkflowId(ref);
    const startWorkflowOperation = new WithStartWorkflowOperation<typeof agentRun>(RUN_WORKFLOW_TYPE, {
      workflowId,
      taskQueue: this.taskQueue,
      args: [{ ...ref, settings, runVersion: RUN_VERSION }],
      // Set with the start, the run does not upsert them again (an upsert is a billed Action).
      typedSearchAttributes: runAttributes({ ...ref, settings }, startedStatus(RUN_VERSION)),
      workflowIdConflictPolicy: "FAIL",
      staticSummary: summaryLine(request.text),
    });
    try {
      const update = await this.client.workflow.startUpdateWithStart(deliverUpdate, {
        args: [request],
        startWorkflowOperation,
        // The handler answers synchronously: the acceptance response already carries the outcome.
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        updateId: deliveryId,
      });
      const result = await update.result();
      // The run that took the update, as the server named it: no describe() round trip.
      const runId = update.workflowRunId;
      if (runId === undefined) throw new Error("update-with-start answered without the run's id");
      return { kind: "delivered", delivered: { ...result, workflowId, runId } };
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) return undefined;
      const refusal = refusalOf(error);
      if (refusal) return refusalAttempt(refusal.type ?? DeliveryRefusal.invalid, refusal.message);
      throw error;
    }
  }

  /**
   * Delivers to the session's live run by the `deliverMessage` signal and reads its answer with the
   * `delivery` query (a query sent while the signal's workflow task is pending is answered after
   * it). `pending` when no worker answers within `waitMs`. A message the run hands over (it had
   * decided to end) is answered with the next execution's id when that has started within the
   * same `waitMs`, else with the ending run's.
   */
  private async deliverLive(
    ref: SessionRef,
    request: DeliverRequest,
    deliveryId: string,
    waitMs: number,
  ): Promise<DeliveryAttempt> {
    const live = await this.liveRun(ref);
    if (live.kind !== "live") return busyAttempt(live.kind);
    const { handle, runId } = live;
    const sent = await this.sendLive(handle, (pinned) =>
      pinned.signal(deliverSignal, { deliveryId, text: request.text, mode: request.mode }),
    );
    if (sent !== "sent") return busyAttempt("not-live");
    const workflowId = runWorkflowId(ref);
    const deadline = Date.now() + waitMs;
    const answer = await this.askUntilSeen(deadline, () => handle.query(deliveryQuery, deliveryId));
    if (answer?.result) {
      // The run that reads a handed-over message is the session's next execution.
      const reader = answer.result.handedOver ? await this.continuedAs(ref, runId, deadline) : undefined;
      return { kind: "delivered", delivered: { ...answer.result, workflowId, runId: reader ?? runId } };
    }
    if (answer?.refusal) return refusalAttempt(answer.refusal.type, answer.refusal.message);
    return { kind: "delivered", delivered: { delivery: "pending", workflowId, runId } };
  }

  /**
   * The id of the execution `runId` continues as, once it has (by `deadline`); undefined when it
   * has not by then or closed otherwise. Never throws.
   */
  private async continuedAs(ref: SessionRef, runId: string, deadline: number): Promise<string | undefined> {
    try {
      await this.client.withDeadline(deadline, () => this.pinned(ref, runId).result());
    } catch (error) {
      if (error instanceof WorkflowContinuedAsNewError) return error.newExecutionRunId;
    }
    return undefined;
  }

  /**
   * Asks the run a query about something just signalled until it has seen it (`ask` answers null
   * while it has not: the query overtook the signal's workflow task). Undefined when no worker
   * answers by `deadline` (all down, redeploying) or its code predates the query.
   */
  private async askUntilSeen<T>(deadline: number, ask: () => Promise<T | null>): Promise<T | undefined> {
    while (Date.now() < deadline) {
      const answer = await this.client.withDeadline(deadline, ask).catch(() => undefined);
      if (answer === undefined) return undefined;
      if (answer !== null) return answer;
      await sleep(50);
    }
    return undefined;
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

  /** Appends a label entry to an idle session (sets or clears the label of `targetId`). */
  label(ref: SessionRef, options: Omit<LabelSessionInput, keyof SessionRef>): Promise<LabelSessionResult> {
    return this.exclusive<LabelSessionResult>(ref, "labelSession", { ...ref, ...options });
  }

  /**
   * Runs a maintenance workflow under the session's run id, so it never overlaps a run. The task
   * records in its memo which agent run it follows, so reads right after it (`executions`,
   * `events`) find that run through Temporal's strongly consistent description instead of its
   * eventually consistent list of executions.
   */
  private async exclusive<R>(ref: SessionRef, workflowType: string, input: unknown): Promise<R> {
    const follows = await this.newestRunId(ref);
    try {
      return await this.client.workflow.execute(workflowType, {
        workflowId: runWorkflowId(ref),
        taskQueue: this.taskQueue,
        args: [input],
        workflowIdConflictPolicy: "FAIL",
        staticSummary: `${workflowType} ${ref.sessionId}`,
        memo: { [FOLLOWS_RUN_MEMO]: follows ?? NO_RUN },
      });
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) throw new SessionBusyError(ref);
      throw error;
    }
  }

  /**
   * Asks the live run to stop (the abort signal, recorded by the server even with every worker
   * down) and reads which queued messages it will not read (the `abortState` query). When no
   * worker answers within `answerWaitMs` the outcome is `signalled`: the run stops when a worker
   * picks it up, and its result and `agent_end` event name the unprocessed messages.
   */
  async abort(ref: SessionRef, request: AbortRequest, options: AbortOptions = {}): Promise<AbortOutcome> {
    const live = await this.liveRun(ref);
    if (live.kind !== "live") return live;
    const { handle, runId } = live;
    const signalled = await this.sendLive(handle, (pinned) =>
      pinned.signal(abortSignal, request.reason ?? DEFAULT_ABORT_REASON),
    );
    if (signalled !== "sent") return { kind: "not-live" };
    const state = await this.askUntilSeen(Date.now() + (options.answerWaitMs ?? ANSWER_WAIT_MS), async () => {
      const current = await handle.query(abortStateQuery);
      return current.kind === "running" ? null : current;
    });
    if (state?.kind === "aborting") {
      return { kind: "answered", runId, reason: state.reason, unprocessed: state.unprocessed };
    }
    // It ended on its own before the abort arrived.
    if (state?.kind === "ended") return { kind: "not-live" };
    return { kind: "signalled", runId };
  }

  /**
   * Sends the abort signal only (no answer): for senders that need none, e.g. a chat
   * integration's stop word. Needs no worker, like the fallback of `abort`.
   */
  async signalAbort(ref: SessionRef, reason: string): Promise<SignalOutcome> {
    return this.signalLive(ref, (handle) => handle.signal(abortSignal, reason));
  }

  /** Delivers an approval decision to the live run (worker not needed, like `abort`). */
  async approve(ref: SessionRef, decision: ApprovalDecision): Promise<SignalOutcome> {
    return this.signalLive(ref, (handle) => handle.signal(approveSignal, decision));
  }

  /**
   * The run's own state query (what the workflow last said of itself); undefined when the session
   * never had a run. Says nothing of a workflow that failed or was terminated: `latestRun` does.
   */
  async state(ref: SessionRef): Promise<RunState | undefined> {
    const runId = await this.newestRunId(ref);
    if (runId === undefined) return undefined;
    return this.pinned(ref, runId).query(stateQuery);
  }

  /** The MCP tool list the session's newest run recorded (null: none), undefined without a run. */
  async mcpTools(ref: SessionRef): Promise<McpToolList | null | undefined> {
    const runId = await this.newestRunId(ref);
    if (runId === undefined) return undefined;
    return this.pinned(ref, runId).query(mcpToolsQuery);
  }

  /**
   * The session's newest agent run: Temporal's description (run id, open or closed and how) plus
   * the run's state query. Undefined when the session never had a run. A maintenance task that
   * ran after it (branch, compact, label) does not hide it. A run whose workflow failed, was
   * terminated, timed out or was canceled carries `failure`, whatever its last state said: such a
   * workflow never recorded its end itself.
   */
  async latestRun(ref: SessionRef): Promise<LatestRun | undefined> {
    return (await this.executions(ref)).run;
  }

  /** The session's newest agent run and, when a maintenance task ran after it, that task. */
  async executions(ref: SessionRef): Promise<SessionExecutions> {
    const latest = await this.describeLatest(ref);
    if (latest === undefined) return {};
    if (latest.type === RUN_WORKFLOW_TYPE) return { run: await this.runOf(ref, latest) };
    const kind = MAINTENANCE_KINDS[latest.type as keyof typeof MAINTENANCE_KINDS];
    const maintenance = kind ? { kind, status: latest.status.name.toLowerCase() } : undefined;
    const runId = await this.runIdBehind(ref, latest);
    const run =
      runId !== undefined ? await this.runOf(ref, await this.pinned(ref, runId).describe()) : undefined;
    return { ...(run ? { run } : {}), ...(maintenance ? { maintenance } : {}) };
  }

  /** The process's shared feed of the session's run stream (see run-feed.ts). */
  feed(ref: SessionRef, runOpen: boolean): RunFeed {
    this.feeds ??= new RunFeeds(this.client);
    return this.feeds.feed(runWorkflowId(ref), runOpen);
  }

  /** Events of the session's newest agent run after `afterSeq` (none when it never had a run). */
  async events(ref: SessionRef, afterSeq: number): Promise<AgentEvent[]> {
    const runId = await this.newestRunId(ref);
    if (runId === undefined) return [];
    const run = this.pinned(ref, runId);
    const ask = () => run.query(eventsQuery, afterSeq);
    try {
      // The hot path (clients poll this) asks once; only a slow answer costs a description.
      return await this.client
        .withDeadline(Date.now() + STATE_QUERY_WAIT_MS, ask)
        .catch(async (error: unknown) => {
          if (error instanceof QueryNotRegisteredError) throw error;
          const description = await run.describe();
          // A closed run answers through any worker replaying it; an open one only through its own.
          return description.status.name === "RUNNING" ? this.queryOpenRun(description, ask) : ask();
        });
    } catch (error) {
      if (error instanceof QueryNotRegisteredError) return [];
      throw error;
    }
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
    const latest = await this.describeLatest(ref);
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

  handle(ref: SessionRef) {
    return this.client.workflow.getHandle(runWorkflowId(ref));
  }

  /** Temporal's description of the latest execution under the session's workflow id, if any. */
  private async describeLatest(ref: SessionRef): Promise<Description | undefined> {
    try {
      return await this.client.workflow.getHandle(runWorkflowId(ref)).describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    }
  }

  /** The run id of the session's newest agent run: the latest execution, or the one behind a maintenance task. */
  private async newestRunId(ref: SessionRef): Promise<string | undefined> {
    const latest = await this.describeLatest(ref);
    if (latest === undefined) return undefined;
    return latest.type === RUN_WORKFLOW_TYPE ? latest.runId : this.runIdBehind(ref, latest);
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
    const query = `WorkflowId = "${runWorkflowId(ref)}" AND WorkflowType = "${RUN_WORKFLOW_TYPE}"`;
    for await (const execution of this.client.workflow.list({ query, pageSize: 1 })) return execution.runId;
    return undefined;
  }

  /** A handle on one execution (never following to a newer one). */
  private pinned(ref: SessionRef, runId: string) {
    return this.client.workflow.getHandle(runWorkflowId(ref), runId, { followRuns: false });
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

  /**
   * A query of an open run, bounded: Temporal holds a query whose worker is gone until the call's
   * own deadline (minutes). After STATE_QUERY_WAIT_MS without an answer it looks at the pollers of
   * the run's task queue: none at all (every worker is down) ends the wait at once; some (a live
   * worker, or one that died within the last minute) get one more wait, since a live worker takes
   * a dead one's cached run over once the sticky queue times out. Then RunNotAnsweringError, which
   * says which it was. A QueryNotRegisteredError (older code) passes through.
   */
  private async queryOpenRun<T>(description: Description, ask: () => Promise<T>): Promise<T> {
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

  /**
   * Signals the session's run when Temporal describes it as an open agent run. Reads nothing
   * from the workflow itself (no query), so it needs no live worker.
   */
  private async signalLive(ref: SessionRef, send: (handle: Handle) => Promise<void>): Promise<SignalOutcome> {
    const live = await this.liveRun(ref);
    if (live.kind !== "live") return live.kind;
    return this.sendLive(live.handle, send);
  }

  /**
   * The session's run when Temporal describes it as an open agent run, with a handle pinned to
   * it, so nothing sent through it lands on a run started meanwhile. Reads nothing from the
   * workflow itself (no query), so it needs no live worker.
   */
  private async liveRun(
    ref: SessionRef,
  ): Promise<{ kind: "live"; runId: string; handle: Handle } | { kind: "not-live" } | { kind: "no-run" }> {
    const workflowId = runWorkflowId(ref);
    let description: Description;
    try {
      description = await this.client.workflow.getHandle(workflowId).describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return { kind: "no-run" };
      throw error;
    }
    // A maintenance task (branch, compact, label) holding the id is not a run to signal.
    if (description.status.name !== "RUNNING" || description.type !== RUN_WORKFLOW_TYPE) {
      return { kind: "not-live" };
    }
    const handle = this.client.workflow.getHandle(workflowId, description.runId);
    return { kind: "live", runId: description.runId, handle };
  }

  /** Sends through a pinned handle; `not-live` when the run closed since it was described. */
  private async sendLive(handle: Handle, send: (handle: Handle) => Promise<void>): Promise<SignalOutcome> {
    try {
      await send(handle);
      return "sent";
    } catch (error) {
      // It closed between the description and the send.
      if (error instanceof WorkflowNotFoundError) return "not-live";
      throw error;
    }
  }
}

/** The failure a closed execution ended with, read from its close event. */
async function failureOf(
  handle: ReturnType<Client["workflow"]["getHandle"]>,
  status: ClosedByFailure,
): Promise<RunFailure> {
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

/** One try at a delivery: delivered, refused for good, or refused until the session is free. */
type DeliveryAttempt =
  | { kind: "delivered"; delivered: Delivered }
  | { kind: "refused"; refusal: DeliveryRefusedError }
  | { kind: "retry"; refusal: DeliveryRefusedError };

function refusalAttempt(type: string, message: string): DeliveryAttempt {
  const refusal = new DeliveryRefusedError(type, message);
  return type === DeliveryRefusal.ended ? { kind: "retry", refusal } : { kind: "refused", refusal };
}

/**
 * The workflow id is held by no live run: the run closed a moment ago (start anew) or a
 * maintenance task (branch, compact, label) holds it (wait for it).
 */
function busyAttempt(kind: "not-live" | "no-run"): DeliveryAttempt {
  const message =
    kind === "no-run"
      ? "the session's run could not be started; send again"
      : "the session is busy (its run is ending, or a branch, compaction or label is running); send again";
  return { kind: "retry", refusal: new DeliveryRefusedError(DeliveryRefusal.busy, message) };
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

function summaryLine(text: string): string {
  const first = text.split("\n", 1)[0] ?? "";
  return first.length > 120 ? `${first.slice(0, 117)}...` : first;
}

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
