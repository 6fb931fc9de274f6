/**
 * The client side of a session's runs, over Temporal: delivering messages (`delivery.ts`),
 * finding the session's run and reading its state (`session-runs.ts`), abort, approvals, events
 * and the live feed (here), and maintenance of an idle session (`maintenance.ts`). Used by the
 * HTTP API, the Slack integration, the benchmarks and the tests.
 */
import { type Client, QueryNotRegisteredError } from "@temporalio/client";
import {
  decodeArrayFromPayloads,
  extstoreInboundOptions,
  visit,
  walkPollActivityTaskQueueResponse,
} from "@temporalio/common/lib/internal-non-workflow";
import { temporal } from "@temporalio/proto";
import {
  type AbortRequest,
  type AbortResult,
  type ApprovalDecision,
  type BudgetRequest,
  DEFAULT_ABORT_REASON,
  type DeliverRequest,
  type RunSettings,
  type RunState,
  runWorkflowId,
  type SessionRef,
} from "../contracts/runs";
import type { RunWait } from "../contracts/waits";
import type { AgentEvent } from "../core/events";
import type { PolledActivityTask } from "../environments/calls";
import type { McpToolList } from "../mcp/types";
import {
  abortSignal,
  abortStateQuery,
  approveSignal,
  budgetSignal,
  eventsQuery,
  mcpToolsQuery,
  stateQuery,
} from "../workflows/definitions";
import type {
  BranchSessionInput,
  BranchSessionResult,
  CompactSessionInput,
  CompactSessionResult,
  LabelSessionInput,
  LabelSessionResult,
} from "../workflows/session-maintenance";
import { ANSWER_WAIT_MS, type Delivered, type DeliverOptions, Delivery } from "./delivery";
import { Maintenance } from "./maintenance";
import { type RunFeed, RunFeeds } from "./run-feed";
import { describeRunWait } from "./run-waits";
import {
  type LatestRun,
  type SessionExecutions,
  SessionRuns,
  type SignalOutcome,
  STATE_QUERY_WAIT_MS,
} from "./session-runs";

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

/**
 * What became of a budget change: the run `answered` with its state once it took the change (for a
 * `resume` of a run paused at its own budget: once it went on), or did not answer in time and the
 * change was `signalled` (the run applies it when a worker picks it up), or there was no live run.
 */
export type BudgetOutcome =
  | { kind: "answered"; runId: string; state: RunState }
  | { kind: "signalled"; runId: string }
  | { kind: "not-live" }
  | { kind: "no-run" };

export interface AbortOptions {
  /** How long to wait for the run's answer before answering `signalled`. */
  answerWaitMs?: number;
}

export class RunClient {
  private feeds?: RunFeeds;
  private readonly runs: SessionRuns;
  private readonly delivery: Delivery;
  private readonly maintenance: Maintenance;

  constructor(
    /** The Temporal client every call goes through (schedules use it too). */
    readonly client: Client,
    readonly taskQueue: string,
    /** The API's public address: each new run links to its session's viewer page (KEEL_API_PUBLIC_URL). */
    apiPublicUrl?: string,
  ) {
    this.runs = new SessionRuns(client);
    this.delivery = new Delivery(client, taskQueue, this.runs, apiPublicUrl);
    this.maintenance = new Maintenance(client, taskQueue, this.runs);
  }

  /**
   * Waits up to `waitMs` for an activity task of `taskQueue` (a runner environment's calls:
   * environments/calls.ts), its input decoded; undefined when none came. Never cancelled once
   * asked: a task the server matched to a poll that went away would be lost until its timeout.
   */
  async pollActivityTask(
    taskQueue: string,
    identity: string,
    waitMs: number,
  ): Promise<PolledActivityTask | undefined> {
    const { connection, options } = this.client;
    const response = await connection
      .withDeadline(Date.now() + waitMs, () =>
        connection.workflowService.pollActivityTaskQueue({
          namespace: options.namespace,
          taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          identity,
        }),
      )
      .catch((error: unknown) => {
        // The deadline passed with no task: the long poll's normal end.
        if ((error as { code?: number }).code === 4) return undefined;
        throw error;
      });
    if (!response?.taskToken?.length) return undefined;
    const decoded = await visit(
      response,
      walkPollActivityTaskQueueResponse,
      // Payloads over the threshold were stored in S3 by the data converter: fetched back here.
      extstoreInboundOptions(options.loadedDataConverter.externalStorage),
    )
      .then(() => decodeArrayFromPayloads(options.loadedDataConverter, response.input?.payloads))
      .then(
        (args) => ({ args }),
        (error: unknown) => ({ args: [], decodeError: error }),
      );
    return {
      taskToken: response.taskToken,
      activityType: response.activityType?.name ?? "",
      activityId: response.activityId ?? "",
      workflowRunId: response.workflowExecution?.runId ?? "",
      attempt: response.attempt ?? 1,
      ...decoded,
    };
  }

  /** About how many activity tasks of `taskQueue` wait for a poll (Temporal's backlog count). */
  async waitingActivityTasks(taskQueue: string): Promise<number> {
    const { connection, options } = this.client;
    const response = await connection.workflowService.describeTaskQueue({
      namespace: options.namespace,
      taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      reportStats: true,
    });
    return Number(response.stats?.approximateBacklogCount ?? 0);
  }

  /** Heartbeats and completions of activities by task token (runner environments: environments/calls.ts). */
  activityCompletion(): Client["activity"] {
    return this.client.activity;
  }

  /** See `Delivery.deliver`: starts the session's run with the message or delivers it to the live one. */
  deliver(
    ref: SessionRef,
    request: DeliverRequest,
    settings: RunSettings,
    options: DeliverOptions = {},
  ): Promise<Delivered> {
    return this.delivery.deliver(ref, request, settings, options);
  }

  /** Compacts an idle session now (an LLM summary); SessionBusyError while a run is live. */
  compact(
    ref: SessionRef,
    options: Omit<CompactSessionInput, keyof SessionRef>,
  ): Promise<CompactSessionResult> {
    return this.maintenance.compact(ref, options);
  }

  /** Moves an idle session's leaf to `entryId`, optionally summarizing the branch left behind. */
  branch(ref: SessionRef, options: Omit<BranchSessionInput, keyof SessionRef>): Promise<BranchSessionResult> {
    return this.maintenance.branch(ref, options);
  }

  /** Appends a label entry to an idle session (sets or clears the label of `targetId`). */
  label(ref: SessionRef, options: Omit<LabelSessionInput, keyof SessionRef>): Promise<LabelSessionResult> {
    return this.maintenance.label(ref, options);
  }

  /** See `Maintenance.deleteHistories`: deletes the histories of the session's closed executions. */
  deleteHistories(ref: SessionRef): Promise<number> {
    return this.maintenance.deleteHistories(ref);
  }

  /**
   * Asks the live run to stop (the abort signal, recorded by the server even with every worker
   * down) and reads which queued messages it will not read (the `abortState` query). When no
   * worker answers within `answerWaitMs` the outcome is `signalled`: the run stops when a worker
   * picks it up, and its result and `agent_end` event name the unprocessed messages.
   */
  async abort(ref: SessionRef, request: AbortRequest, options: AbortOptions = {}): Promise<AbortOutcome> {
    const live = await this.runs.liveRun(ref);
    if (live.kind !== "live") return live;
    const { handle, runId } = live;
    const signalled = await this.runs.sendLive(handle, (pinned) =>
      pinned.signal(abortSignal, request.reason ?? DEFAULT_ABORT_REASON),
    );
    if (signalled !== "sent") return { kind: "not-live" };
    const state = await this.runs.askUntilSeen(
      Date.now() + (options.answerWaitMs ?? ANSWER_WAIT_MS),
      async () => {
        const current = await handle.query(abortStateQuery);
        return current.kind === "running" ? null : current;
      },
    );
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
  signalAbort(ref: SessionRef, reason: string): Promise<SignalOutcome> {
    return this.runs.signalLive(ref, (handle) => handle.signal(abortSignal, reason));
  }

  /**
   * Changes the live run's budgets and/or resumes it when paused (the `budget` signal, recorded
   * with every worker down), then reads its state until it shows the change.
   */
  async setBudget(
    ref: SessionRef,
    request: BudgetRequest,
    options: AbortOptions = {},
  ): Promise<BudgetOutcome> {
    const live = await this.runs.liveRun(ref);
    if (live.kind !== "live") return live;
    const { handle, runId } = live;
    if ((await this.runs.sendLive(handle, (pinned) => pinned.signal(budgetSignal, request))) !== "sent") {
      return { kind: "not-live" };
    }
    const state = await this.runs.askUntilSeen(
      Date.now() + (options.answerWaitMs ?? ANSWER_WAIT_MS),
      async () => {
        const current = await handle.query(stateQuery);
        return tookBudget(current, request) ? current : null;
      },
    );
    return state ? { kind: "answered", runId, state } : { kind: "signalled", runId };
  }

  /** Delivers an approval decision to the live run (worker not needed, like `abort`). */
  approve(ref: SessionRef, decision: ApprovalDecision): Promise<SignalOutcome> {
    return this.runs.signalLive(ref, (handle) => handle.signal(approveSignal, decision));
  }

  /**
   * The run's own state query (what the workflow last said of itself); undefined when the session
   * never had a run. Says nothing of a workflow that failed or was terminated: `latestRun` does.
   */
  async state(ref: SessionRef): Promise<RunState | undefined> {
    const runId = await this.runs.newestRunId(ref);
    if (runId === undefined) return undefined;
    return this.runs.pinned(ref, runId).query(stateQuery);
  }

  /** The MCP tool list the session's newest run recorded (null: none), undefined without a run. */
  async mcpTools(ref: SessionRef): Promise<McpToolList | null | undefined> {
    const runId = await this.runs.newestRunId(ref);
    if (runId === undefined) return undefined;
    return this.runs.pinned(ref, runId).query(mcpToolsQuery);
  }

  /**
   * The session's newest agent run: Temporal's description (run id, open or closed and how) plus
   * the run's state query. Undefined when the session never had a run. A maintenance task that
   * ran after it (branch, compact, label) does not hide it. A run whose workflow failed, was
   * terminated, timed out or was canceled carries `failure`, whatever its last state said: such a
   * workflow never recorded its end itself.
   */
  async latestRun(ref: SessionRef): Promise<LatestRun | undefined> {
    return (await this.runs.executions(ref)).run;
  }

  /** The session's newest agent run and, when a maintenance task ran after it, that task. */
  executions(ref: SessionRef): Promise<SessionExecutions> {
    return this.runs.executions(ref);
  }

  /** The process's shared feed of the session's run stream (see run-feed.ts). */
  feed(ref: SessionRef, runOpen: boolean): RunFeed {
    this.feeds ??= new RunFeeds(this.client);
    return this.feeds.feed(runWorkflowId(ref), runOpen);
  }

  /**
   * What the session's open run waits for (a runner of its environment, a worker), from
   * Temporal's description of it: no worker needs to answer. Undefined when it waits on nothing
   * outside itself, or is not open.
   */
  wait(ref: SessionRef): Promise<RunWait | undefined> {
    return describeRunWait(this.handle(ref));
  }

  /** Events of the session's newest agent run after `afterSeq` (none when it never had a run). */
  async events(ref: SessionRef, afterSeq: number): Promise<AgentEvent[]> {
    const runId = await this.runs.newestRunId(ref);
    if (runId === undefined) return [];
    const run = this.runs.pinned(ref, runId);
    const ask = () => run.query(eventsQuery, afterSeq);
    try {
      // The hot path (clients poll this) asks once; only a slow answer costs a description.
      return await this.client
        .withDeadline(Date.now() + STATE_QUERY_WAIT_MS, ask)
        .catch(async (error: unknown) => {
          if (error instanceof QueryNotRegisteredError) throw error;
          const description = await run.describe();
          // A closed run answers through any worker replaying it; an open one only through its own.
          return description.status.name === "RUNNING" ? this.runs.queryOpenRun(description, ask) : ask();
        });
    } catch (error) {
      if (error instanceof QueryNotRegisteredError) return [];
      throw error;
    }
  }

  handle(ref: SessionRef) {
    return this.client.workflow.getHandle(runWorkflowId(ref));
  }
}

/**
 * Whether the run's state shows a budget request taken: its budgets are the ones asked for, and a
 * resume of a run paused at its own budget has let it go on (or end).
 */
function tookBudget(state: RunState, request: BudgetRequest): boolean {
  if (state.status !== "paused" && state.status !== "running" && state.status !== "waiting_approval") {
    return true;
  }
  const budget = state.budget;
  if (!budget) return true;
  // A resume may lift the budget it names (0): either value shows the request was taken.
  const shows = (asked: number | undefined, now: number) =>
    asked === undefined || now === asked || (request.resume === true && now === 0);
  if (!shows(request.maxCostUsd, budget.maxCostUsd) || !shows(request.maxTokens, budget.maxTokens))
    return false;
  // A resume lifts a run budget at once; a tenant's budget it asks about afresh first.
  const stillWaiting = state.pause?.reason.type === "runBudget" || state.pause?.rechecking === true;
  return !(request.resume && state.status === "paused" && stillWaiting);
}
