/**
 * `keel compare <session> <session> [...]`: sessions side by side — status, model, turns, tool
 * calls, tokens, cost, the files changed and the final answer — read from each session's stored
 * entries and workspace diff (docs/evals.md, "Replay and compare"). A fork (a replay) is counted
 * from the entries it did not inherit: its own run's.
 */
import { type ApiClient, ApiError, EXIT } from "../../api-client/client";
import type { AgentMessage, AssistantMessage } from "../../core/messages";
import { type Command, parseCommand, printJson } from "../command";
import { formatUsd, oneLine, textOf } from "../render";
import { storedEntries } from "../session-entries";

/** What is compared of one session. */
export interface ComparisonRow {
  sessionId: string;
  /** The session it was forked from, when it is a fork. */
  parentSession?: string;
  /** A fork's last entry copied from its parent (the fork point), when any was. */
  forkedAt?: string;
  /** The status of its latest run (else the session's). */
  status: string;
  /** The models of its assistant messages, in order of first use; empty: no model answered. */
  models: string[];
  /** Assistant messages. */
  turns: number;
  /** Tool calls by tool name. */
  toolCalls: Record<string, number>;
  tokens: { input: number; output: number };
  /** Sum of the assistant messages' `usage.cost.total`, US dollars. */
  costUsd: number;
  /** The files the session's diff lists (for a fork, what its parent changed before the fork too). */
  files: Array<{ path: string; change: string }>;
  /** The last assistant message's text, one line. */
  finalText: string;
}

/** The stored entries a comparison reads (the API types entries as plain records). */
type EntryView = { id: string; type: string; message?: AgentMessage };

const FINAL_TEXT_CHARS = 200;

/**
 * The row of one session from its entries: only those whose ids are not in `inherited` (a fork's
 * entries copied from its parent) are counted.
 */
export function comparisonRow(
  session: { sessionId: string; status: string; parentSession?: string },
  entries: readonly EntryView[],
  inherited: ReadonlySet<string>,
  files: ComparisonRow["files"],
): ComparisonRow {
  const assistants = entries.flatMap((entry) =>
    !inherited.has(entry.id) && entry.type === "message" && entry.message?.role === "assistant"
      ? [entry.message as AssistantMessage]
      : [],
  );
  const toolCalls: Record<string, number> = {};
  const tokens = { input: 0, output: 0 };
  let costUsd = 0;
  const models: string[] = [];
  for (const message of assistants) {
    for (const block of message.content)
      if (block.type === "toolCall") toolCalls[block.name] = (toolCalls[block.name] ?? 0) + 1;
    tokens.input += message.usage?.input ?? 0;
    tokens.output += message.usage?.output ?? 0;
    costUsd += message.usage?.cost?.total ?? 0;
    if (message.model && !models.includes(message.model)) models.push(message.model);
  }
  const last = assistants.at(-1);
  const forkedAt = entries.findLast((entry) => inherited.has(entry.id))?.id;
  return {
    sessionId: session.sessionId,
    ...(session.parentSession !== undefined ? { parentSession: session.parentSession } : {}),
    ...(forkedAt !== undefined ? { forkedAt } : {}),
    status: session.status,
    models,
    turns: assistants.length,
    toolCalls,
    tokens,
    costUsd,
    files,
    finalText: last ? oneLine(textOf(last), FINAL_TEXT_CHARS) : "",
  };
}

const MAX_COLUMN = 48;

function cell(text: string): string {
  return text.length > MAX_COLUMN ? `${text.slice(0, MAX_COLUMN - 1)}…` : text;
}

/** The rows as a text table: one column per session, one line per measure. */
export function comparisonTable(rows: readonly ComparisonRow[]): string {
  const measures: Array<[string, (row: ComparisonRow) => string]> = [
    ["session", (row) => row.sessionId],
    ["forked from", (row) => row.parentSession ?? "-"],
    ["forked at", (row) => row.forkedAt ?? "-"],
    ["status", (row) => row.status],
    ["model", (row) => row.models.join(", ") || "-"],
    ["turns", (row) => String(row.turns)],
    [
      "tool calls",
      (row) =>
        Object.entries(row.toolCalls)
          .map(([name, count]) => `${name}×${count}`)
          .join(" ") || "-",
    ],
    ["tokens in/out", (row) => `${row.tokens.input}/${row.tokens.output}`],
    ["cost", (row) => formatUsd(row.costUsd)],
    ["files changed", (row) => row.files.map((file) => `${file.path} (${file.change})`).join(", ") || "-"],
    ["final answer", (row) => row.finalText || "-"],
  ];
  const cells = measures.map(([name, value]) => [name, ...rows.map((row) => cell(value(row)))]);
  const widths = rows.map((_, column) =>
    Math.max(...cells.map((line) => (line[column + 1] as string).length)),
  );
  const nameWidth = Math.max(...measures.map(([name]) => name.length));
  return cells
    .map(([name, ...values]) =>
      [
        (name as string).padEnd(nameWidth),
        ...values.map((value, column) => value.padEnd(widths[column] ?? 0)),
      ]
        .join("  ")
        .trimEnd(),
    )
    .join("\n")
    .concat("\n");
}

/** Every stored entry of the session. */
async function allEntries(client: ApiClient, sessionId: string): Promise<EntryView[]> {
  const entries: EntryView[] = [];
  for await (const { entry } of storedEntries(client, sessionId)) entries.push(entry as EntryView);
  return entries;
}

/** The ids of the entries of `parentSession` (none when it cannot be read: deleted, another tenant's). */
async function inheritedIds(client: ApiClient, parentSession: string | undefined): Promise<Set<string>> {
  if (parentSession === undefined) return new Set();
  try {
    return new Set((await allEntries(client, parentSession)).map((entry) => entry.id));
  } catch (error) {
    if (error instanceof ApiError && error.slug === "session-not-found") return new Set();
    throw error;
  }
}

/** The comparison row of one session, read through the API. */
export async function readComparisonRow(client: ApiClient, sessionId: string): Promise<ComparisonRow> {
  const param = { param: { sessionId } };
  const [session, entries, diff] = await Promise.all([
    client.json(client.api.v1.sessions[":sessionId"].$get(param)),
    allEntries(client, sessionId),
    client.json(client.api.v1.sessions[":sessionId"].diff.$get(param)),
  ]);
  const parentSession = session.parentSession ?? undefined;
  return comparisonRow(
    {
      sessionId,
      status: session.run?.status ?? session.status,
      ...(parentSession !== undefined ? { parentSession } : {}),
    },
    entries,
    await inheritedIds(client, parentSession),
    diff.files.map(({ path, change }) => ({ path, change })),
  );
}

export const compareCommand: Command = {
  usage: "keel compare <session> <session> [...] [--json]",
  summary:
    "sessions side by side: status, model, turns, tool calls, tokens, cost, files changed, final answer",
  help: "A fork (keel replay, keel fork) is counted from the entries it did not inherit from its parent: its own runs. Files changed are the session's whole diff (a fork's includes what its parent changed before the fork point).",
  async run(argv, context) {
    const parsed = parseCommand(argv, {}, { min: 2, max: 20, names: "<session> <session> [...]" }, context);
    const rows: ComparisonRow[] = [];
    for (const sessionId of parsed.positionals) rows.push(await readComparisonRow(parsed.client, sessionId));
    if (parsed.json) printJson(context, { sessions: rows });
    else context.out.write(comparisonTable(rows));
    return EXIT.ok;
  },
};
