/**
 * Request and response schemas of the schedule routes (`/v1/schedules`). A schedule's run
 * settings are those of a message body (`messageBodySchema`), so both state the same rules.
 */
import { z } from "@hono/zod-openapi";
import {
  MAX_SCHEDULE_ID_CHARS,
  OVERLAP_POLICIES,
  parseDuration,
  UNATTENDED_APPROVALS,
} from "../workflows/schedules";
import { ProblemError } from "./problems";
import type { ScheduleTiming } from "./schedules";
import { API_SESSION_ID_PATTERN, type MessageBodyOptions, messageBodySchema } from "./schemas";

/** Shortest interval between firings, and the shortest catch-up window Temporal accepts. */
const MIN_INTERVAL_MS = 1_000;
const MIN_CATCHUP_WINDOW_MS = 10_000;
const DEFAULT_CATCHUP_WINDOW = "10m";
const MAX_CRON_CHARS = 256;
/** The form of a cron expression (its fields' values are Temporal's to check). */
const CRON_PATTERN =
  /^(@(yearly|annually|monthly|weekly|daily|hourly)|[0-9A-Za-z*?,/#-]+( [0-9A-Za-z*?,/#-]+){4,6})$/;

const SCHEDULE_ID_PATTERN = new RegExp(`^[A-Za-z0-9][A-Za-z0-9_-]{0,${MAX_SCHEDULE_ID_CHARS - 1}}$`);

const ScheduleIdSchema = z
  .string()
  .regex(
    SCHEDULE_ID_PATTERN,
    `schedule ids are 1-${MAX_SCHEDULE_ID_CHARS} letters, digits, _ and - (not first)`,
  )
  .openapi({ param: { name: "scheduleId", in: "path" }, example: "nightly-deps" });

export const ScheduleParamsSchema = z.object({ scheduleId: ScheduleIdSchema });

/**
 * A duration's form. Its bounds, like the rest of what the document cannot state (one of `cron`
 * and `every`, a cron expression Temporal can read), are checked by `scheduleTimingOf` and refused
 * with 422 `invalid-schedule`.
 */
const duration = (name: string, atLeast: RegExp, least: string) =>
  z
    .string()
    .max(32)
    // One pattern (the document holds one): a duration's form with a part of at least `least`.
    .regex(atLeast, `${name} is a duration of at least ${least} such as 90s, 15m, 1h30m or 1d`);

/** Durations with a part of a second or more (so the whole is 1 s or more), in the document's words. */
const AT_LEAST_A_SECOND = /^(\d+(ms|s|m|h|d))*0*[1-9]\d*(s|m|h|d)(\d+(ms|s|m|h|d))*$/;
/** Durations with a part of ten seconds or more. */
const AT_LEAST_TEN_SECONDS = /^(\d+(ms|s|m|h|d))*(0*[1-9]\d*(m|h|d)|0*[1-9]\d+s)(\d+(ms|s|m|h|d))*$/;

/** The body of `POST /v1/schedules`: when, what, how overlapping firings and approvals go, and run settings. */
export function scheduleBodySchema(options: MessageBodyOptions) {
  return messageBodySchema(options)
    .omit({ delivery: true })
    .extend({
      scheduleId: ScheduleIdSchema.optional().openapi({
        description: "The schedule's id within the tenant (default: a new random id)",
      }),
      cron: z
        .string()
        .min(1)
        .max(MAX_CRON_CHARS)
        .regex(CRON_PATTERN, "a cron expression of 5 to 7 fields (`0 3 * * *`), or @daily, @hourly, …")
        .optional()
        .openapi({
          description:
            "When it fires, as a cron expression (`0 3 * * 1-5`; Temporal reads it and refuses what it cannot: 400); give `cron` or `every`",
        }),
      timezone: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[A-Za-z0-9_+/-]+$/, "an IANA time zone name such as Europe/Berlin")
        .optional()
        .openapi({ description: "Time zone of `cron` (default UTC)" }),
      every: duration("every", AT_LEAST_A_SECOND, "1s").optional().openapi({
        description: "When it fires, as an interval (`15m`, `1h`, `1d`); give `cron` or `every`",
      }),
      sessionId: z
        .string()
        .regex(API_SESSION_ID_PATTERN, "a session id (letters, digits, _ and -)")
        .optional()
        .openapi({
          description:
            "Every firing continues this session (a run already live there reads the prompt as a follow-up); default: every firing starts a new session `<scheduleId>-<firing time>`",
        }),
      overlap: z
        .enum(OVERLAP_POLICIES as [string, ...string[]])
        .default("skip")
        .openapi({
          description:
            "A firing while the previous firing's run still goes: `skip` it, `buffer-one` (run it after; one at most waits), or `cancel-previous` (abort the running one, then start)",
        }),
      catchupWindow: duration("catchupWindow", AT_LEAST_TEN_SECONDS, "10s")
        .default(DEFAULT_CATCHUP_WINDOW)
        .openapi({
          description:
            "A firing missed while Temporal itself was down still starts when it is back within this window (default 10m); firings while only workers are down start on time and wait for a worker",
        }),
      onApproval: z
        .enum(UNATTENDED_APPROVALS as [string, ...string[]])
        .default("deny")
        .openapi({
          description:
            "A tool call the policy would `ask` about: `deny` it at once (default: nobody watches a scheduled run), or `wait` for `keel approve` up to `policy.approvalTimeoutMs` (default 1 h), then deny",
        }),
      paused: z.boolean().default(false),
      note: z.string().max(1_000).optional().openapi({ description: "A note shown with the schedule" }),
    })
    .openapi("ScheduleRequest", {
      // Exactly one of `cron` and `every`, `timezone` with `cron` only (the server checks the same).
      oneOf: [{ required: ["cron"] }, { required: ["every"], not: { required: ["timezone"] } }],
      description:
        "The run settings (model, systemPrompt, tools, policy, workspace, limits, network, hooks) are a message's; `text` is the prompt every firing delivers. Exactly one of `cron` and `every`, `timezone` with `cron` only (else 422 invalid-schedule); `every` at least 1 s, `catchupWindow` at least 10 s (their patterns).",
    });
}

const RunRefSchema = z.object({ workflowId: z.string(), runId: z.string() });

export const ScheduleSchema = z
  .object({
    scheduleId: z.string(),
    temporalScheduleId: z.string().openapi({ description: "The id on the Temporal UI's Schedules page" }),
    cron: z.string().optional(),
    timezone: z.string().optional(),
    every: z.string().optional(),
    sessionId: z.string().optional(),
    overlap: z.enum(OVERLAP_POLICIES as [string, ...string[]]),
    catchupWindow: z.string(),
    onApproval: z.enum(UNATTENDED_APPROVALS as [string, ...string[]]),
    model: z.string(),
    summary: z.string().openapi({ description: "The prompt's first line" }),
    text: z.string().optional().openapi({ description: "The prompt (on get and create)" }),
    paused: z.boolean(),
    note: z.string().optional(),
    nextRuns: z.array(z.string()).openapi({ description: "The next firing times (ISO 8601)" }),
    recentRuns: z.array(
      RunRefSchema.extend({ scheduledAt: z.string(), startedAt: z.string() }).openapi({
        description:
          "A firing: its `scheduledRun` workflow (whose result names the session and the run's end)",
      }),
    ),
    runningRuns: z.array(RunRefSchema).optional(),
  })
  .openapi("Schedule");

export const ScheduleListSchema = z.object({ schedules: z.array(ScheduleSchema) }).openapi("ScheduleList");

export const ScheduleNoteSchema = z
  .object({ note: z.string().max(1_000).optional() })
  .openapi("ScheduleNote", { description: "A note shown with the schedule (why it was paused)" });

export const ScheduleDeletedSchema = z
  .object({ scheduleId: z.string(), deleted: z.literal(true) })
  .openapi("ScheduleDeleted");

/**
 * When a schedule fires, from a body its schema accepted: 422 `invalid-schedule` for what the
 * document cannot state (both or neither of `cron` and `every`, a `timezone` without `cron`, an
 * interval under MIN_INTERVAL_MS, a catch-up window under MIN_CATCHUP_WINDOW_MS).
 */
export function scheduleTimingOf(body: {
  cron?: string | undefined;
  timezone?: string | undefined;
  every?: string | undefined;
  catchupWindow: string;
}): ScheduleTiming {
  const refuse = (detail: string) => new ProblemError("invalid-schedule", detail);
  if ((body.cron === undefined) === (body.every === undefined))
    throw refuse("Give exactly one of cron and every.");
  if ((parseDuration(body.catchupWindow) ?? 0) < MIN_CATCHUP_WINDOW_MS)
    throw refuse(`catchupWindow is at least ${MIN_CATCHUP_WINDOW_MS / 1000} s.`);
  if (body.cron !== undefined) {
    return { cron: body.cron, ...(body.timezone !== undefined ? { timezone: body.timezone } : {}) };
  }
  if (body.timezone !== undefined) throw refuse("timezone applies to cron only.");
  const every = body.every as string;
  if ((parseDuration(every) ?? 0) < MIN_INTERVAL_MS)
    throw refuse(`every is at least ${MIN_INTERVAL_MS / 1000} s.`);
  return { every };
}
