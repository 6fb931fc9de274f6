/** `keel sessions` and `keel show`: what a tenant's sessions are and where they stand. */
import type { Usage } from "../../core/messages";
import { EXIT } from "../client";
import { type Command, integerOption, parseCommand, printJson, sessionPath } from "../command";
import { formatUsage } from "../render";

interface SessionList {
  sessions: Array<{ sessionId: string; createdAt?: string; parentSession?: string }>;
  nextCursor?: string;
}

interface SessionView {
  sessionId: string;
  status: string;
  run?: {
    runId: string;
    status: string;
    turn: number;
    usage: Usage;
    cost: number;
    pendingToolCalls: Array<{ toolCallId: string; name: string; state: string }>;
    endReason?: string;
  };
  entryCount: number;
  leafId: string | null;
  createdAt?: string;
  parentSession?: string;
}

export const sessionsCommand: Command = {
  usage: "keel sessions [--limit N] [--cursor C]",
  summary: "list your sessions (oldest id first)",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      { limit: { type: "string" }, cursor: { type: "string" } },
      { min: 0, max: 0, names: "no arguments" },
      context,
    );
    const query = new URLSearchParams();
    const limit = integerOption(parsed.values.limit as string | undefined, "limit", 1);
    if (limit !== undefined) query.set("limit", String(limit));
    if (typeof parsed.values.cursor === "string") query.set("cursor", parsed.values.cursor);
    const list = await parsed.client.request<SessionList>(
      "GET",
      `/v1/sessions${query.size ? `?${query}` : ""}`,
    );
    if (parsed.json) {
      printJson(context, list);
      return EXIT.ok;
    }
    for (const session of list.sessions) {
      const parent = session.parentSession ? `  (fork of ${session.parentSession})` : "";
      context.out.write(`${session.sessionId}  ${session.createdAt ?? ""}${parent}\n`);
    }
    if (list.sessions.length === 0) context.out.write("no sessions\n");
    if (list.nextCursor) context.out.write(`more: keel sessions --cursor ${list.nextCursor}\n`);
    return EXIT.ok;
  },
};

export const showCommand: Command = {
  usage: "keel show <session>",
  summary: "a session's status, latest run, usage and pending approvals",
  async run(argv, context) {
    const parsed = parseCommand(argv, {}, { min: 1, max: 1, names: "<session>" }, context);
    const [sessionId] = parsed.positionals as [string];
    const view = await parsed.client.request<SessionView>("GET", sessionPath(sessionId));
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
    if (view.run) {
      const run = view.run;
      lines.push(
        `run      ${run.runId}: ${run.status}, turn ${run.turn}${run.endReason ? ` (${run.endReason})` : ""}`,
        `usage    ${formatUsage(run.usage)}`,
      );
      for (const call of run.pendingToolCalls) {
        lines.push(`pending  ${call.name} ${call.toolCallId} (${call.state})`);
      }
    }
    context.out.write(`${lines.join("\n")}\n`);
    return EXIT.ok;
  },
};
