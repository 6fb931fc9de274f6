/**
 * `keel schedule create|list|show|pause|resume|trigger|delete`: runs that start on a schedule
 * (a cron expression or an interval), each firing in a new session or continuing `--session`.
 * Run options are `keel run`'s.
 */
import type { InferRequestType } from "hono/client";
import type { ScheduleView } from "../../api/schedules";
import { type ApiClient, EXIT, type ExitCode, UsageError } from "../../api-client/client";
import { parseDuration } from "../../workflows/schedules";
import { type Command, type CommandContext, parseCommand, printJson } from "../command";
import { MESSAGE_OPTIONS, messageBody, RUN_OPTIONS_HELP } from "./message";

type PostSchedule = ApiClient["api"]["v1"]["schedules"]["$post"];
/** The body of `POST /v1/schedules`, as the API declares it. */
type ScheduleBody = InferRequestType<PostSchedule>["json"];

/** Run options only: a schedule's runs are not followed from the command line. */
const { follow: _follow, "no-stream": _noStream, ...RUN_OPTIONS } = MESSAGE_OPTIONS;

const CREATE_OPTIONS = {
  ...RUN_OPTIONS,
  id: { type: "string" },
  session: { type: "string", short: "s" },
  overlap: { type: "string" },
  catchup: { type: "string" },
  "on-approval": { type: "string" },
  timezone: { type: "string" },
  paused: { type: "boolean", default: false },
  note: { type: "string" },
} as const;

function timingOf(view: ScheduleView): string {
  if (view.every !== undefined) return `every ${view.every}`;
  return `cron "${view.cron}"${view.timezone ? ` (${view.timezone})` : ""}`;
}

/** One line per schedule (list), or the whole schedule (show). */
function describe(view: ScheduleView, full: boolean): string {
  const state = view.paused ? `paused${view.note ? ` (${view.note})` : ""}` : "active";
  const line = `${view.scheduleId}  ${timingOf(view)}  ${state}  ${JSON.stringify(view.summary)}`;
  if (!full) return line;
  const lines = [
    line,
    `  temporal schedule: ${view.temporalScheduleId}`,
    `  session:  ${view.sessionId ?? "a new one per firing"}`,
    `  overlap:  ${view.overlap} · approvals: ${view.onApproval}`,
    `  next:     ${view.nextRuns.slice(0, 3).join(", ") || "none"}`,
    ...view.recentRuns.slice(-5).map((run) => `  fired:    ${run.scheduledAt}  ${run.workflowId}`),
  ];
  return lines.join("\n");
}

/** `"0 3 * * *"` → cron; `15m`, `1h30m`, `every 15m` → interval. */
export function timingFrom(text: string): { cron: string } | { every: string } {
  const interval = text.trim().replace(/^(@?every)\s+/i, "");
  if (parseDuration(interval) !== undefined) return { every: interval };
  if (text.trim().split(/\s+/).length < 5 && !text.trim().startsWith("@"))
    throw new UsageError(
      `"${text}" is neither a cron expression ("0 3 * * *") nor an interval (15m, 1h, 1d)`,
    );
  return { cron: text.trim() };
}

function choice<T extends string>(value: unknown, allowed: readonly T[], name: string): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !allowed.includes(value as T))
    throw new UsageError(`--${name} must be ${allowed.join(", ")}`);
  return value as T;
}

async function create(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(
    argv,
    CREATE_OPTIONS,
    { min: 2, max: 2, names: '"<cron or interval>" "<prompt>"' },
    context,
  );
  const [when, text] = parsed.positionals as [string, string];
  if (!text.trim()) throw new UsageError("the prompt is empty");
  const { values } = parsed;
  const { delivery: _delivery, ...settings } = messageBody(text, "auto", values, parsed.apiUrl);
  const timing = timingFrom(when);
  const body: ScheduleBody = { ...settings, ...timing };
  if (typeof values.timezone === "string") body.timezone = values.timezone;
  if (typeof values.id === "string") body.scheduleId = values.id;
  if (typeof values.session === "string") body.sessionId = values.session;
  const overlap = choice(values.overlap, ["skip", "buffer-one", "cancel-previous"] as const, "overlap");
  if (overlap) body.overlap = overlap;
  const onApproval = choice(values["on-approval"], ["deny", "wait"] as const, "on-approval");
  if (onApproval) body.onApproval = onApproval;
  if (typeof values.catchup === "string") body.catchupWindow = values.catchup;
  if (values.paused) body.paused = true;
  if (typeof values.note === "string") body.note = values.note;
  const { client } = parsed;
  const view = (await client.json(client.api.v1.schedules.$post({ json: body }))) as ScheduleView;
  if (parsed.json) printJson(context, view);
  else context.out.write(`created schedule ${describe(view, true)}\n`);
  return EXIT.ok;
}

async function list(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(argv, {}, { min: 0, max: 0, names: "no arguments" }, context);
  const { client } = parsed;
  const answer = await client.json(client.api.v1.schedules.$get());
  if (parsed.json) printJson(context, answer);
  else if (answer.schedules.length === 0) context.out.write("no schedules\n");
  else for (const view of answer.schedules) context.out.write(`${describe(view as ScheduleView, false)}\n`);
  return EXIT.ok;
}

type Action = "show" | "pause" | "resume" | "trigger" | "delete";

async function act(action: Action, argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(
    argv,
    action === "pause" || action === "resume" ? { note: { type: "string" } } : {},
    { min: 1, max: 1, names: "<schedule id>" },
    context,
  );
  const [scheduleId] = parsed.positionals as [string];
  const { client } = parsed;
  const schedule = client.api.v1.schedules[":scheduleId"];
  const param = { param: { scheduleId } };
  const note = typeof parsed.values.note === "string" ? { note: parsed.values.note } : {};
  const answer =
    action === "show"
      ? await client.json(schedule.$get(param))
      : action === "pause"
        ? await client.json(schedule.pause.$post({ ...param, json: note }))
        : action === "resume"
          ? await client.json(schedule.resume.$post({ ...param, json: note }))
          : action === "trigger"
            ? await client.json(schedule.trigger.$post(param))
            : await client.json(schedule.$delete(param));
  if (parsed.json) printJson(context, answer);
  else if (action === "trigger") context.out.write(`fired schedule ${scheduleId}\n`);
  else if (action === "delete") context.out.write(`deleted schedule ${scheduleId}\n`);
  else context.out.write(`${describe(answer as ScheduleView, true)}\n`);
  return EXIT.ok;
}

const SUBCOMMANDS = `Subcommands:
  create "<cron or interval>" "<prompt>" [options]   fire on a cron expression ("0 3 * * *") or an
                                       interval (15m, 1h, 1d); each firing runs the prompt
  list                                 the schedules of this API key's tenant
  show <id>                            a schedule: timing, policies, next and recent firings
  pause <id> [--note TEXT] · resume <id> [--note TEXT]
  trigger <id>                         fire now (under the overlap policy)
  delete <id>                          fire no more (a run already going goes on)

Options of create:
  --id ID                  the schedule's id (default: a random one)
  --session ID, -s ID      every firing continues this session (default: a new session per firing)
  --overlap P              a firing while the previous run goes: skip (default), buffer-one,
                           cancel-previous (abort the running one, then start)
  --catchup D              a firing missed while Temporal was down still starts within D (default 10m)
  --on-approval deny|wait  a tool call the policy asks about: deny at once (default), or wait for
                           \`keel approve\` up to --approval-timeout (default 1h), then deny
  --timezone TZ            time zone of a cron expression (default UTC)
  --paused                 create it paused; --note TEXT: a note shown with it

${RUN_OPTIONS_HELP.replace(/\n {2}--follow[\s\S]*$/, "")}`;

export const scheduleCommand: Command = {
  usage: "keel schedule create|list|show|pause|resume|trigger|delete …",
  summary: "runs on a schedule (cron or interval), backed by Temporal Schedules",
  help: SUBCOMMANDS,
  run(argv, context) {
    const [sub, ...rest] = argv;
    switch (sub) {
      case "create":
        return create(rest, context);
      case "list":
        return list(rest, context);
      case "show":
      case "pause":
      case "resume":
      case "trigger":
      case "delete":
        return act(sub, rest, context);
      default:
        throw new UsageError(sub === undefined ? "name a subcommand" : `unknown subcommand '${sub}'`);
    }
  },
};
