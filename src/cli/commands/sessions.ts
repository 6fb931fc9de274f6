/** `keel sessions` and `keel show`: what a tenant's sessions are and where they stand. */
import type { InferResponseType } from "hono/client";
import { type ApiClient, EXIT, UsageError } from "../../api-client/client";
import type { RunWait } from "../../contracts/waits";
import { type Command, integerOption, parseCommand, printJson } from "../command";
import { pauseAdvice } from "../pause-advice";
import { formatUsage } from "../render";
import {
  costOf,
  formatCost,
  readStoredSession,
  type SessionDetails,
  sessionDetails,
} from "./session-details";
import { subAgentLines } from "./sub-agents";

type ListSessions = ApiClient["api"]["v1"]["sessions"]["$get"];
type SessionListItem = InferResponseType<ListSessions, 200>["sessions"][number];

/** Orders `keel sessions` can print in: by last activity or creation (newest first), or by id. */
const SESSION_SORTS = ["activity", "created", "id"] as const;
type SessionSort = (typeof SESSION_SORTS)[number];

/** Newest first by `field`; sessions without it last, then by id. */
function newestFirst(field: "lastActivityAt" | "createdAt") {
  return (a: SessionListItem, b: SessionListItem): number => {
    const left = a[field] ?? "";
    const right = b[field] ?? "";
    if (left !== right) return left < right ? 1 : -1;
    return a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0;
  };
}

/**
 * The tenant's sessions in `sort` order. The API pages in id order, so every page is read and
 * the whole list sorted here (one request per 1,000 sessions).
 */
async function allSessions(client: ApiClient, sort: Exclude<SessionSort, "id">): Promise<SessionListItem[]> {
  const sessions: SessionListItem[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.json(
      client.api.v1.sessions.$get({ query: { limit: "1000", ...(cursor ? { cursor } : {}) } }),
    );
    sessions.push(...page.sessions);
    cursor = page.nextCursor;
  } while (cursor);
  return sessions.sort(newestFirst(sort === "activity" ? "lastActivityAt" : "createdAt"));
}

/** Sessions the human listing shows (with details read for each) unless --limit says otherwise. */
const DEFAULT_SHOWN = 20;
/** Sessions whose details are read at once. */
const DETAIL_READS = 4;

/**
 * Two lines per session: id, where its latest run stands, cost (its sub-agents' included), last
 * activity and origin; then the prompt it started with.
 */
function sessionLines(session: SessionListItem, details: SessionDetails): string {
  const parent = session.parentSession ? `  fork of ${session.parentSession}` : "";
  const active = session.lastActivityAt ? `  last active ${session.lastActivityAt}` : "";
  const created = !active && session.createdAt ? `  created ${session.createdAt}` : "";
  const cost = details.cost ? `  ${formatCost(details.cost)}` : "";
  const state = `  ${details.status ?? "status unknown"}${cost}`;
  const prompt = details.firstPrompt ? `\n    “${details.firstPrompt}”` : "";
  return `${session.sessionId}${state}${active}${created}${parent}${prompt}`;
}

/** Each session's details, read a few at a time. */
async function detailsOf(client: ApiClient, sessions: SessionListItem[]) {
  const details: SessionDetails[] = [];
  for (let start = 0; start < sessions.length; start += DETAIL_READS) {
    const batch = sessions.slice(start, start + DETAIL_READS);
    details.push(...(await Promise.all(batch.map((session) => sessionDetails(client, session.sessionId)))));
  }
  return details;
}

export const sessionsCommand: Command = {
  usage: "keel sessions [--sort activity|created|id] [--limit N] [--cursor C]",
  summary: "list your sessions, most recently active first (--sort to change)",
  help: `--sort activity (default) or created: newest first, over all your sessions;
--sort id: the API's own order, a page at a time (--limit N, then --cursor C for the next page).
--limit N shows the first N sessions (without it: the first ${DEFAULT_SHOWN}, and how many more there are).
Each session shows its latest run's status (running, waiting_approval, paused, completed,
failed, aborted), its cost over all its runs (the usage stored on its answers, plus its
sub-agents': "incl. sub-agents $X" says their part), its last activity, the session it was forked
from, and the prompt it started with.`,
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      {
        limit: { type: "string" },
        cursor: { type: "string" },
        sort: { type: "string", default: "activity" },
      },
      { min: 0, max: 0, names: "no arguments" },
      context,
    );
    const sort = parsed.values.sort as string;
    if (!(SESSION_SORTS as readonly string[]).includes(sort))
      throw new UsageError(`--sort must be one of ${SESSION_SORTS.join(", ")}`);
    const limit = integerOption(parsed.values.limit as string | undefined, "limit", 1);
    const cursor = parsed.values.cursor;
    let list: { sessions: SessionListItem[]; nextCursor?: string };
    if (sort === "id") {
      const { client } = parsed;
      list = await client.json(
        client.api.v1.sessions.$get({
          query: {
            ...(limit !== undefined ? { limit: String(limit) } : {}),
            ...(typeof cursor === "string" ? { cursor } : {}),
          },
        }),
      );
    } else {
      if (cursor !== undefined) throw new UsageError("--cursor pages in id order: use it with --sort id");
      const sessions = await allSessions(parsed.client, sort as Exclude<SessionSort, "id">);
      list = { sessions: limit === undefined ? sessions : sessions.slice(0, limit) };
    }
    if (parsed.json) {
      printJson(context, list);
      return EXIT.ok;
    }
    const shown = limit === undefined ? list.sessions.slice(0, DEFAULT_SHOWN) : list.sessions;
    const details = await detailsOf(parsed.client, shown);
    shown.forEach((session, index) => {
      context.out.write(`${sessionLines(session, details[index] ?? {})}\n`);
    });
    if (list.sessions.length === 0) context.out.write("no sessions\n");
    if (shown.length < list.sessions.length)
      context.out.write(`${list.sessions.length - shown.length} more: keel sessions --limit N\n`);
    if (list.nextCursor) context.out.write(`more: keel sessions --sort id --cursor ${list.nextCursor}\n`);
    return EXIT.ok;
  },
};

export const showCommand: Command = {
  usage: "keel show <session>",
  summary: "a session's status, latest run, cost, pending approvals, and why a paused run waits",
  help: `usage: the latest run's tokens and cost, its sub-agents' included (as its budgets count them).
cost: the session's over all its runs, sub-agents included — what keel sessions shows.
A paused run says whose budget it reached (its own cost or token budget, or the tenant's) and the
command that lets it go on.`,
  async run(argv, context) {
    const parsed = parseCommand(argv, {}, { min: 1, max: 1, names: "<session>" }, context);
    const [sessionId] = parsed.positionals as [string];
    const { client } = parsed;
    const view = await client.json(client.api.v1.sessions[":sessionId"].$get({ param: { sessionId } }));
    if (parsed.json) {
      printJson(context, view);
      return EXIT.ok;
    }
    const lines = [
      `session  ${view.sessionId}`,
      `status   ${view.status}`,
      `entries  ${view.entryCount} (leaf ${view.leafId ?? "none"})`,
      ...(view.createdAt ? [`created  ${view.createdAt}`] : []),
      ...(view.parentSession ? [`fork of  ${view.parentSession}`] : []),
    ];
    const stored = await readStoredSession(client, sessionId);
    if (view.run) {
      const run = view.run;
      const turn = run.turn !== undefined ? `, turn ${run.turn}` : "";
      lines.push(`run      ${run.runId}: ${run.status}${turn}${run.endReason ? ` (${run.endReason})` : ""}`);
      if (run.pause) {
        const advice = pauseAdvice(sessionId, run.pause.reason);
        const until = new Date(run.pause.until).toISOString();
        lines.push(`paused   at ${advice.cause}; without a raise or a resume it ends at ${until}`);
        lines.push(`go on    ${advice.goOn}`);
      }
      if (run.error)
        lines.push(`error    ${run.error.type ? `${run.error.type}: ` : ""}${run.error.message}`);
      // What a running run waits for outside itself: its status alone says "running".
      if (run.waiting) lines.push(`waiting  ${waitLine(run.waiting, Date.now())}`);
      const included = stored.taskCalls.length > 0 ? ", sub-agents included" : "";
      if (run.usage) lines.push(`usage    this run${included}: ${formatUsage(run.usage)}`);
      for (const call of run.pendingToolCalls) {
        lines.push(`pending  ${call.name} ${call.toolCallId} (${call.state})`);
      }
    }
    lines.push(`cost     ${formatCost(await costOf(client, stored))}`);
    lines.push(...(await subAgentLines(client, stored.taskCalls)));
    context.out.write(`${lines.join("\n")}\n`);
    return EXIT.ok;
  },
};

/** `keel show`'s wait line: what the run waits for, and how long it has (`for environment \`e\`: … (52 s)`). */
function waitLine(wait: Pick<RunWait, "message" | "since">, now: number): string {
  const seconds = Math.max(0, Math.round((now - wait.since) / 1000));
  return `${wait.message.replace(/^waiting /, "")} (${seconds} s)`;
}
