/**
 * The session tree from the command line: `keel entries` (ids to point at), `keel fork`,
 * `keel branch [--summarize]`, `keel label` and `keel compact`.
 */

import { type ApiClient, EXIT, UsageError } from "../../api-client/client";
import { ENTRY_ID_HEX_DIGITS } from "../../core/ids";
import type { AgentMessage } from "../../core/messages";
import { type Command, integerOption, parseCommand, printJson } from "../command";
import { oneLine, textOf } from "../render";
import { entriesPage } from "../session-entries";

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
function entryLine(seq: number, entry: EntryView): string {
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

/** One page of a session's stored entries (`GET …/entries`), as the resolver reads them. */
export type EntriesPage = {
  entries: Array<{ seq: number; entry: Record<string, unknown> }>;
  nextAfter?: number;
};
export type ReadEntriesPage = (after: number | undefined, limit: number) => Promise<EntriesPage>;

const FULL_ENTRY_ID = new RegExp(`^[0-9a-f]{${ENTRY_ID_HEX_DIGITS}}$`);
const ENTRIES_PAGE_LIMIT = 1_000;

/**
 * The entry id a command line names: an id as it is, the index \`keel entries\` shows in its
 * first column (a number is always read as one), or the unambiguous start of an id. Anything
 * else goes to the API as it is, which answers for an entry that does not exist.
 */
export async function resolveEntryRef(
  sessionId: string,
  ref: string,
  readPage: ReadEntriesPage,
): Promise<string> {
  if (FULL_ENTRY_ID.test(ref)) return ref;
  if (/^\d+$/.test(ref)) {
    const seq = Number(ref);
    // The entry at `seq` is the first one after `seq - 1`.
    const { entries } = await readPage(seq > 0 ? seq - 1 : undefined, 1);
    const found = entries[0]?.seq === seq ? entries[0].entry.id : undefined;
    if (typeof found !== "string")
      throw new UsageError(
        `session ${sessionId} has no entry ${seq}; \`keel entries ${sessionId}\` lists them`,
      );
    return found;
  }
  if (!/^[0-9a-f]+$/i.test(ref)) return ref;
  const prefix = ref.toLowerCase();
  const matches: string[] = [];
  for (let after: number | undefined; ; ) {
    const page = await readPage(after, ENTRIES_PAGE_LIMIT);
    for (const { entry } of page.entries)
      if (typeof entry.id === "string" && entry.id.startsWith(prefix)) matches.push(entry.id);
    if (page.nextAfter === undefined || page.entries.length === 0) break;
    after = page.nextAfter;
  }
  if (matches.length > 1)
    throw new UsageError(
      `${ref} starts ${matches.length} entry ids (${matches.slice(0, 5).join(", ")}); give more of it`,
    );
  return matches[0] ?? ref;
}

/** `resolveEntryRef` over the API. */
export function entryIdOf(client: ApiClient, sessionId: string, ref: string): Promise<string> {
  return resolveEntryRef(
    sessionId,
    ref,
    (after, limit) => entriesPage(client, sessionId, after, limit) as Promise<EntriesPage>,
  );
}

export const entriesCommand: Command = {
  usage: "keel entries <session> [--after SEQ] [--limit N]",
  summary: "the session's stored entries: index, id, what it is (fork, branch and label take either)",
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

const ENTRY_HELP =
  "<entry> is an entry's id, its index (the first column of `keel entries`; a number is always an index) or the start of its id when no other id starts so.";

export const forkCommand: Command = {
  usage: "keel fork <session> <entry>",
  summary: "a new session holding the path from the root to the entry (the original is unchanged)",
  help: ENTRY_HELP,
  async run(argv, context) {
    const parsed = parseCommand(argv, {}, { min: 2, max: 2, names: "<session> <entry>" }, context);
    const [sessionId, ref] = parsed.positionals as [string, string];
    const { client } = parsed;
    const entryId = await entryIdOf(client, sessionId, ref);
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
  usage: "keel branch <session> <entry> [--summarize]",
  summary:
    "continue the (idle) session from an earlier entry; --summarize keeps a summary of the branch left",
  help: ENTRY_HELP,
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      { summarize: { type: "boolean", default: false } },
      { min: 2, max: 2, names: "<session> <entry>" },
      context,
    );
    const [sessionId, ref] = parsed.positionals as [string, string];
    const { client } = parsed;
    const entryId = await entryIdOf(client, sessionId, ref);
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
  usage: 'keel label <session> <entry> ["<label>"]',
  summary: "label an entry of an idle session (no label: clear it)",
  help: ENTRY_HELP,
  async run(argv, context) {
    const parsed = parseCommand(argv, {}, { min: 2, max: 3, names: "<session> <entry> [label]" }, context);
    const [sessionId, ref, label] = parsed.positionals as [string, string, string | undefined];
    const { client } = parsed;
    const entryId = await entryIdOf(client, sessionId, ref);
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
