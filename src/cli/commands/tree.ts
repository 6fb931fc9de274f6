/**
 * The session tree from the command line: `keel entries` (ids to point at), `keel fork`,
 * `keel branch [--summarize]`, `keel label` and `keel compact`.
 */
import type { AgentMessage } from "../../core/messages";
import { EXIT } from "../client";
import { type Command, integerOption, parseCommand, printJson } from "../command";
import { oneLine, textOf } from "../render";

/** The fields of a stored entry shown in a listing (the API types entries as plain records). */
type EntryView = {
  id: string;
  type: string;
  message?: AgentMessage;
  summary?: string;
  targetId?: string;
  label?: string;
  customType?: string;
};

/** One line per entry: `seq  id  what it is`. */
export function entryLine(seq: number, entry: EntryView): string {
  let what: string = entry.type;
  if (entry.type === "message" && entry.message) {
    const calls =
      entry.message.role === "assistant"
        ? entry.message.content.flatMap((block) => (block.type === "toolCall" ? [block.name] : []))
        : [];
    const text = entry.message.role === "toolResult" ? entry.message.toolName : textOf(entry.message);
    what = `${entry.message.role}: ${oneLine(text, 100)}${calls.length ? ` [calls ${calls.join(", ")}]` : ""}`;
  } else if (entry.type === "label") {
    what = entry.label ? `label "${entry.label}" on ${entry.targetId}` : `label cleared on ${entry.targetId}`;
  } else if (entry.summary) {
    what = `${entry.type}: ${oneLine(entry.summary, 100)}`;
  } else if (entry.customType) {
    what = `${entry.type} ${entry.customType}`;
  }
  return `${String(seq).padStart(4)}  ${entry.id}  ${what}`;
}

export const entriesCommand: Command = {
  usage: "keel entries <session> [--after SEQ] [--limit N]",
  summary: "the session's stored entries with their ids (for fork, branch and label)",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      { after: { type: "string" }, limit: { type: "string" } },
      { min: 1, max: 1, names: "<session>" },
      context,
    );
    const [sessionId] = parsed.positionals as [string];
    const after = integerOption(parsed.values.after as string | undefined, "after");
    const limit = integerOption(parsed.values.limit as string | undefined, "limit", 1);
    const { client } = parsed;
    const page = await client.json(
      client.api.v1.sessions[":sessionId"].entries.$get({
        param: { sessionId },
        query: {
          ...(after !== undefined ? { after: String(after) } : {}),
          ...(limit !== undefined ? { limit: String(limit) } : {}),
        },
      }),
    );
    if (parsed.json) {
      printJson(context, page);
      return EXIT.ok;
    }
    for (const { seq, entry } of page.entries) context.out.write(`${entryLine(seq, entry as EntryView)}\n`);
    if (page.entries.length === 0) context.out.write("no entries\n");
    if (page.nextAfter !== undefined)
      context.out.write(`more: keel entries ${sessionId} --after ${page.nextAfter}\n`);
    return EXIT.ok;
  },
};

export const forkCommand: Command = {
  usage: "keel fork <session> <entryId>",
  summary: "a new session holding the path from the root to the entry (the original is unchanged)",
  async run(argv, context) {
    const parsed = parseCommand(argv, {}, { min: 2, max: 2, names: "<session> <entryId>" }, context);
    const [sessionId, entryId] = parsed.positionals as [string, string];
    const { client } = parsed;
    const created = await client.json(
      client.api.v1.sessions[":sessionId"].fork.$post({ param: { sessionId }, json: { entryId } }),
    );
    if (parsed.json) printJson(context, created);
    else
      context.out.write(
        `forked ${sessionId} at ${entryId}: new session ${created.sessionId} (${created.entryCount} entries)\n`,
      );
    return EXIT.ok;
  },
};

export const branchCommand: Command = {
  usage: "keel branch <session> <entryId> [--summarize]",
  summary:
    "continue the (idle) session from an earlier entry; --summarize keeps a summary of the branch left",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      { summarize: { type: "boolean", default: false } },
      { min: 2, max: 2, names: "<session> <entryId>" },
      context,
    );
    const [sessionId, entryId] = parsed.positionals as [string, string];
    const { client } = parsed;
    const result = await client.json(
      client.api.v1.sessions[":sessionId"].branch.$post({
        param: { sessionId },
        json: { entryId, summarize: Boolean(parsed.values.summarize) },
      }),
    );
    if (parsed.json) printJson(context, result);
    else
      context.out.write(
        `session ${sessionId} continues from ${entryId} (new leaf ${result.leafId}${result.summarized ? ", the branch left was summarized" : ""})\n`,
      );
    return EXIT.ok;
  },
};

export const labelCommand: Command = {
  usage: 'keel label <session> <entryId> ["<label>"]',
  summary: "label an entry of an idle session (no label: clear it)",
  async run(argv, context) {
    const parsed = parseCommand(argv, {}, { min: 2, max: 3, names: "<session> <entryId> [label]" }, context);
    const [sessionId, entryId, label] = parsed.positionals as [string, string, string | undefined];
    const { client } = parsed;
    const result = await client.json(
      client.api.v1.sessions[":sessionId"].labels.$post({
        param: { sessionId },
        json: { entryId, ...(label !== undefined ? { label } : {}) },
      }),
    );
    if (parsed.json) printJson(context, result);
    else
      context.out.write(
        label !== undefined ? `labelled ${entryId} "${label}"\n` : `cleared the label of ${entryId}\n`,
      );
    return EXIT.ok;
  },
};

export const compactCommand: Command = {
  usage: 'keel compact <session> [--instructions "<focus>"]',
  summary: "summarize the older part of an idle session's context now",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      { instructions: { type: "string" } },
      { min: 1, max: 1, names: "<session>" },
      context,
    );
    const [sessionId] = parsed.positionals as [string];
    const instructions = parsed.values.instructions;
    const { client } = parsed;
    const result = await client.json(
      client.api.v1.sessions[":sessionId"].compact.$post({
        param: { sessionId },
        json: typeof instructions === "string" ? { instructions } : {},
      }),
    );
    if (parsed.json) printJson(context, result);
    else
      context.out.write(
        result.compacted
          ? `compacted ${sessionId}: ${result.tokensBefore} tokens summarized into entry ${result.entryId}\n`
          : `nothing compacted: ${result.reason}\n`,
      );
    return EXIT.ok;
  },
};
