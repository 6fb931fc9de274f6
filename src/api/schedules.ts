/**
 * A tenant's schedules as Temporal Schedules: create, list, describe, pause, resume, trigger
 * and delete. Every Temporal schedule id is `keel-schedule/<tenant>/<id>` and every call builds
 * it from the caller's own tenant, so no request reaches another tenant's schedule; the list
 * keeps only ids with the tenant's prefix. Each firing starts the `scheduledRun` workflow.
 */
import {
  type Client,
  isGrpcServiceError,
  ScheduleAlreadyRunning,
  type ScheduleDescription,
  ScheduleNotFoundError,
  type ScheduleOverlapPolicy,
  type ScheduleSpec,
  type ScheduleSummary,
} from "@temporalio/client";
import type { RunSettings } from "../contracts/runs";
import { WorkflowType } from "../workflows/references";
import {
  firingWorkflowIdBase,
  type OverlapPolicy,
  parseDuration,
  type ScheduledRunInput,
  temporalScheduleId,
  temporalScheduleIdPrefix,
  type UnattendedApproval,
} from "../workflows/schedules";
import { TenantAttribute } from "../workflows/search-attributes";
import { ProblemError } from "./problems";

/** gRPC's INVALID_ARGUMENT status code, as Temporal's service answers a spec it cannot read. */
const GRPC_INVALID_ARGUMENT = 3;

/** Memo key of what a schedule was created with, as the API shows it (ids and settings, no prompt). */
const SCHEDULE_MEMO = "keelSchedule";

const OVERLAP: Record<OverlapPolicy, ScheduleOverlapPolicy> = {
  skip: "SKIP",
  "buffer-one": "BUFFER_ONE",
  "cancel-previous": "CANCEL_OTHER",
};

/** When a schedule fires: a cron expression or a fixed interval (`every`, e.g. `15m`). */
export type ScheduleTiming = { cron: string; timezone?: string } | { every: string };

/** What a schedule is created with (checked by the route's schema). */
export interface NewSchedule {
  scheduleId: string;
  timing: ScheduleTiming;
  text: string;
  sessionId?: string;
  settings: RunSettings;
  overlap: OverlapPolicy;
  /** How late a firing missed while Temporal itself was down may still start (e.g. `10m`). */
  catchupWindow: string;
  onApproval: UnattendedApproval;
  paused: boolean;
  note?: string;
}

/** What the memo records: the schedule as it was asked for, for list and get. */
interface ScheduleMemo {
  timing: ScheduleTiming;
  sessionId?: string;
  overlap: OverlapPolicy;
  catchupWindow: string;
  onApproval: UnattendedApproval;
  model: string;
  summary: string;
}

/** A schedule as the API shows it. */
export interface ScheduleView {
  scheduleId: string;
  /** Temporal's schedule id (what the Temporal UI's Schedules page lists). */
  temporalScheduleId: string;
  cron?: string;
  timezone?: string;
  every?: string;
  /** The session every firing continues; absent: each firing starts a new one. */
  sessionId?: string;
  overlap: OverlapPolicy;
  catchupWindow: string;
  onApproval: UnattendedApproval;
  model: string;
  /** The prompt's first line (the whole prompt: `text`, on get). */
  summary: string;
  text?: string;
  paused: boolean;
  note?: string;
  nextRuns: string[];
  recentRuns: Array<{ scheduledAt: string; startedAt: string; workflowId: string; runId: string }>;
  /** Firings whose run is still going (get only). */
  runningRuns?: Array<{ workflowId: string; runId: string }>;
}

/** schedule-not-found: also for another tenant's id, which no lookup can name. */
function missing(scheduleId: string): ProblemError {
  return new ProblemError("schedule-not-found", `No schedule ${scheduleId} for this API key.`);
}

function summaryLine(text: string): string {
  const first = text.split("\n", 1)[0] ?? "";
  return first.length > 120 ? `${first.slice(0, 117)}...` : first;
}

function specOf(timing: ScheduleTiming): ScheduleSpec {
  if ("cron" in timing) {
    return { cronExpressions: [timing.cron], ...(timing.timezone ? { timezone: timing.timezone } : {}) };
  }
  return { intervals: [{ every: parseDuration(timing.every) ?? 0 }] };
}

export class TenantSchedules {
  constructor(
    private readonly client: Client,
    /** The task queue runs (and so firings) go to. */
    private readonly taskQueue: string,
    private readonly tenantId: string,
  ) {}

  /** Creates the schedule; `schedule-exists` when the tenant has one with this id. */
  async create(schedule: NewSchedule): Promise<ScheduleView> {
    const { scheduleId } = schedule;
    const input: ScheduledRunInput = {
      tenantId: this.tenantId,
      scheduleId,
      text: schedule.text,
      settings: schedule.settings,
      ...(schedule.sessionId !== undefined ? { sessionId: schedule.sessionId } : {}),
    };
    const memo: ScheduleMemo = {
      timing: schedule.timing,
      overlap: schedule.overlap,
      catchupWindow: schedule.catchupWindow,
      onApproval: schedule.onApproval,
      model: schedule.settings.model,
      summary: summaryLine(schedule.text),
      ...(schedule.sessionId !== undefined ? { sessionId: schedule.sessionId } : {}),
    };
    try {
      await this.client.schedule.create({
        scheduleId: temporalScheduleId(this.tenantId, scheduleId),
        spec: specOf(schedule.timing),
        action: {
          type: "startWorkflow",
          workflowType: WorkflowType.scheduledRun,
          workflowId: firingWorkflowIdBase(this.tenantId, scheduleId),
          taskQueue: this.taskQueue,
          args: [input],
          typedSearchAttributes: [{ key: TenantAttribute, value: this.tenantId }],
          staticSummary: `schedule ${scheduleId}: ${memo.summary}`,
        },
        policies: {
          overlap: OVERLAP[schedule.overlap],
          catchupWindow: parseDuration(schedule.catchupWindow) ?? 0,
          pauseOnFailure: false,
        },
        state: { paused: schedule.paused, ...(schedule.note !== undefined ? { note: schedule.note } : {}) },
        memo: { [SCHEDULE_MEMO]: memo },
        typedSearchAttributes: [{ key: TenantAttribute, value: this.tenantId }],
      });
    } catch (error) {
      if (error instanceof ScheduleAlreadyRunning)
        throw new ProblemError("schedule-exists", `The tenant already has a schedule ${scheduleId}.`);
      // A cron expression or time zone Temporal cannot read (the schema checks only their form):
      // the SDK compiles the spec before sending it and throws a TypeError ("Minute is not in
      // range [0-59]", "unknown time zone …"); the server answers INVALID_ARGUMENT.
      if (error instanceof TypeError)
        throw new ProblemError("invalid-schedule", `The schedule cannot be read: ${error.message}.`);
      if (isGrpcServiceError(error) && error.code === GRPC_INVALID_ARGUMENT)
        throw new ProblemError("invalid-schedule", `Temporal refused the schedule: ${error.details}`);
      throw error;
    }
    return this.get(scheduleId);
  }

  /**
   * The tenant's schedules, by id. Temporal's list is eventually consistent: a schedule created
   * a moment ago may be missing for a second.
   */
  async list(): Promise<ScheduleView[]> {
    const prefix = temporalScheduleIdPrefix(this.tenantId);
    const views: ScheduleView[] = [];
    // The query narrows the list to the tenant; the id prefix is what decides (defence in depth).
    const query = `KeelTenant = "${this.tenantId}"`;
    for await (const summary of this.client.schedule.list({ query })) {
      if (!summary.scheduleId.startsWith(prefix)) continue;
      const view = viewOf(summary.scheduleId.slice(prefix.length), summary);
      if (view) views.push(view);
    }
    return views.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
  }

  async get(scheduleId: string): Promise<ScheduleView> {
    const description = await this.describe(scheduleId);
    const view = viewOf(scheduleId, description);
    if (!view) throw missing(scheduleId);
    const input = description.action.args?.[0] as ScheduledRunInput | undefined;
    return {
      ...view,
      ...(input?.text !== undefined ? { text: input.text } : {}),
      runningRuns: description.info.runningActions.map(({ workflow }) => ({
        workflowId: workflow.workflowId,
        runId: workflow.firstExecutionRunId,
      })),
    };
  }

  async pause(scheduleId: string, note?: string): Promise<ScheduleView> {
    await this.describe(scheduleId);
    await this.handle(scheduleId).pause(note ?? "paused through the API");
    return this.get(scheduleId);
  }

  async resume(scheduleId: string, note?: string): Promise<ScheduleView> {
    await this.describe(scheduleId);
    await this.handle(scheduleId).unpause(note ?? "resumed through the API");
    return this.get(scheduleId);
  }

  /** Fires the schedule now, under its own overlap policy (a paused schedule fires too). */
  async trigger(scheduleId: string): Promise<void> {
    const description = await this.describe(scheduleId);
    await this.handle(scheduleId).trigger(description.policies.overlap);
  }

  /** Deletes the schedule: it fires no more; a firing's run already going goes on. */
  async delete(scheduleId: string): Promise<void> {
    await this.describe(scheduleId);
    try {
      await this.handle(scheduleId).delete();
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) throw missing(scheduleId);
      throw error;
    }
  }

  private handle(scheduleId: string) {
    return this.client.schedule.getHandle(temporalScheduleId(this.tenantId, scheduleId));
  }

  /** The schedule's description; `schedule-not-found` when the tenant has none by that id. */
  private async describe(scheduleId: string): Promise<ScheduleDescription> {
    try {
      return await this.handle(scheduleId).describe();
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) throw missing(scheduleId);
      throw error;
    }
  }
}

/** The API's view of a schedule Temporal lists or describes; undefined when Keel did not make it. */
function viewOf(
  scheduleId: string,
  schedule: ScheduleSummary | ScheduleDescription,
): ScheduleView | undefined {
  const memo = schedule.memo?.[SCHEDULE_MEMO] as ScheduleMemo | undefined;
  if (!memo || typeof memo !== "object") return undefined;
  return {
    scheduleId,
    temporalScheduleId: schedule.scheduleId,
    ...memo.timing,
    ...(memo.sessionId !== undefined ? { sessionId: memo.sessionId } : {}),
    overlap: memo.overlap,
    catchupWindow: memo.catchupWindow,
    onApproval: memo.onApproval,
    model: memo.model,
    summary: memo.summary,
    paused: schedule.state.paused,
    ...(schedule.state.note ? { note: schedule.state.note } : {}),
    // Temporal lists the times a paused schedule would fire at; it fires at none of them.
    nextRuns: schedule.state.paused ? [] : schedule.info.nextActionTimes.map((time) => time.toISOString()),
    recentRuns: schedule.info.recentActions.map((action) => ({
      scheduledAt: action.scheduledAt.toISOString(),
      startedAt: action.takenAt.toISOString(),
      workflowId: action.action.workflow.workflowId,
      runId: action.action.workflow.firstExecutionRunId,
    })),
  };
}
