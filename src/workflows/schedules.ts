/**
 * Scheduled runs: what the API puts into a Temporal Schedule and what each firing's workflow
 * (`scheduledRun`) reads from it. Plain data and pure functions only (used by the workflow
 * bundle, the activities and the API). Docs: docs/api.md ("Schedules"), docs/architecture.md.
 */
import type { RunSettings } from "../contracts/runs";

/** What a firing does while the schedule's previous run is still going. */
export type OverlapPolicy = "skip" | "buffer-one" | "cancel-previous";
export const OVERLAP_POLICIES: readonly OverlapPolicy[] = ["skip", "buffer-one", "cancel-previous"];

/**
 * What a scheduled run does when its tool policy asks for an approval: nobody watches a run that
 * started at 3 am, so `deny` (the default) refuses every call the policy would ask about, and
 * `wait` waits for `keel approve` up to the policy's approval timeout, then refuses.
 */
export type UnattendedApproval = "deny" | "wait";
export const UNATTENDED_APPROVALS: readonly UnattendedApproval[] = ["deny", "wait"];

/** How long a scheduled run waits for an approval with `wait` when its policy names no timeout. */
export const DEFAULT_SCHEDULED_APPROVAL_WAIT_MS = 60 * 60 * 1000;

/** Longest schedule id: the session id of a firing (`<id>-<YYYYMMDDTHHMMSSZ>-<8>`) stays within 128. */
export const MAX_SCHEDULE_ID_CHARS = 64;

/** The argument a schedule starts every firing's `scheduledRun` workflow with. */
export interface ScheduledRunInput {
  tenantId: string;
  /** The schedule's id within its tenant (not the Temporal schedule id). */
  scheduleId: string;
  /** The prompt each firing delivers. */
  text: string;
  /** Continue this session on every firing; absent: every firing starts a new session. */
  sessionId?: string;
  /** The run's settings, approvals already made unattended (`unattendedSettings`). */
  settings: RunSettings;
}

/** How a firing's run ended (the `scheduledRun` workflow's result). */
export interface ScheduledRunResult {
  sessionId: string;
  runId: string;
  status: string;
  reason: string;
}

/** Temporal schedule id of a tenant's schedule: the tenant is part of it, so ids never collide. */
export function temporalScheduleId(tenantId: string, scheduleId: string): string {
  return `keel-schedule/${tenantId}/${scheduleId}`;
}

/** The tenant's part of every one of its Temporal schedule ids. */
export function temporalScheduleIdPrefix(tenantId: string): string {
  return temporalScheduleId(tenantId, "");
}

/**
 * Workflow id the schedule gives its firings; Temporal appends `-<scheduled time, RFC 3339>` to
 * it for each one.
 */
export function firingWorkflowIdBase(tenantId: string, scheduleId: string): string {
  return `keel-scheduled/${tenantId}/${scheduleId}`;
}

/**
 * The new session a firing runs in: `<schedule id>-<firing time as YYYYMMDDTHHMMSSZ>-<last 8
 * characters of the firing's run id>`, from the workflow id and run id Temporal gave the firing.
 * The run id matters: Temporal names firings by the second, so two triggers within one second
 * share a workflow id (one after the other) and differ by run id only. Undefined when the
 * workflow id is not a firing's (a workflow started by hand): the caller picks another id.
 */
export function firingSessionId(
  input: Pick<ScheduledRunInput, "tenantId" | "scheduleId">,
  firing: { workflowId: string; runId: string },
): string | undefined {
  const base = `${firingWorkflowIdBase(input.tenantId, input.scheduleId)}-`;
  if (!firing.workflowId.startsWith(base)) return undefined;
  const stamp = firing.workflowId.slice(base.length).replace(/[^0-9A-Za-z]/g, "");
  const run = firing.runId.replace(/[^0-9A-Za-z]/g, "").slice(-8);
  return stamp && run ? `${input.scheduleId}-${stamp}-${run}` : undefined;
}

/**
 * The run settings of a scheduled run: with `deny`, every rule (and the default) that would ask
 * denies instead, so the run never stops for an approval; with `wait`, an ask waits up to the
 * policy's own timeout when the caller gave one (`approvalTimeoutGiven`), else
 * DEFAULT_SCHEDULED_APPROVAL_WAIT_MS, and then counts as a denial (as every approval timeout does).
 */
export function unattendedSettings(
  settings: RunSettings,
  onApproval: UnattendedApproval,
  approvalTimeoutGiven: boolean,
): RunSettings {
  const policy = settings.policy;
  if (onApproval === "wait") {
    const approvalTimeoutMs = approvalTimeoutGiven
      ? policy.approvalTimeoutMs
      : DEFAULT_SCHEDULED_APPROVAL_WAIT_MS;
    return { ...settings, policy: { ...policy, approvalTimeoutMs } };
  }
  const denyAsks = <T extends { action: string }>(rule: T): T =>
    rule.action === "ask" ? { ...rule, action: "deny" } : rule;
  return {
    ...settings,
    policy: {
      ...policy,
      rules: policy.rules.map(denyAsks),
      default: policy.default === "ask" ? "deny" : policy.default,
    },
  };
}

const DURATION_PART = /(\d+)(ms|s|m|h|d)/g;
const DURATION = /^(\d+(ms|s|m|h|d))+$/;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `90s`, `15m`, `1h30m`, `2d` → milliseconds; undefined for anything else. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(DURATION_PART)) {
    total += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  }
  return total;
}
