/**
 * `keel export` and `keel import`: sessions as pi JSONL files (or tunacode session JSON
 * (pydantic-ai wire messages)), or as session archives (`.tar.gz`: session.jsonl + workspace/).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { EXIT, type ExitCode, UsageError } from "../../api-client/client";
import { isGzip } from "../../store/workspace-archive";
import { type Command, parseCommand, printJson } from "../command";

export const exportCommand: Command = {
  usage: "keel export <session> [--with-workspace | --html] [-o FILE]",
  summary:
    "write the session as one pi JSONL file (stdout without -o); --with-workspace: a .tar.gz with its files; --html: the transcript as one offline page",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      {
        output: { type: "string", short: "o" },
        "with-workspace": { type: "boolean" },
        html: { type: "boolean" },
      },
      { min: 1, max: 1, names: "<session>" },
      context,
    );
    const [sessionId] = parsed.positionals as [string];
    if (parsed.values["with-workspace"] === true) return exportArchive(parsed, sessionId, context);
    if (parsed.values.html === true) return exportHtml(parsed, sessionId, context);
    const text = await parsed.client.exportJsonl(sessionId);
    const file = parsed.values.output;
    if (typeof file !== "string") {
      context.out.write(text);
      return EXIT.ok;
    }
    writeFileSync(file, text);
    const lines = text.split("\n").filter(Boolean).length;
    if (parsed.json) printJson(context, { sessionId, file, lines });
    else context.out.write(`wrote ${file} (${lines} lines)\n`);
    return EXIT.ok;
  },
};

/** `keel export --with-workspace`: the archive to a file (`-o`, default `<session>.tar.gz`). */
async function exportArchive(
  parsed: ReturnType<typeof parseCommand>,
  sessionId: string,
  context: Parameters<Command["run"]>[1],
): Promise<ExitCode> {
  const archive = await parsed.client.exportArchive(sessionId);
  const output = parsed.values.output;
  const file = typeof output === "string" ? output : `${sessionId}.tar.gz`;
  writeFileSync(file, archive);
  if (parsed.json) printJson(context, { sessionId, file, bytes: archive.length });
  else context.out.write(`wrote ${file} (${archive.length} bytes: session.jsonl and workspace/)\n`);
  return EXIT.ok;
}

/** `keel export --html`: the offline transcript page to a file (`-o`, default `<session>.html`). */
async function exportHtml(
  parsed: ReturnType<typeof parseCommand>,
  sessionId: string,
  context: Parameters<Command["run"]>[1],
): Promise<ExitCode> {
  const html = await parsed.client.exportHtml(sessionId);
  const output = parsed.values.output;
  const file = typeof output === "string" ? output : `${sessionId}.html`;
  writeFileSync(file, html);
  if (parsed.json) printJson(context, { sessionId, file, bytes: Buffer.byteLength(html) });
  else context.out.write(`wrote ${file} (open it in a browser; it loads nothing from the network)\n`);
  return EXIT.ok;
}

/** `.json` files are read as tunacode session JSON (pydantic-ai wire messages); anything else as pi JSONL. */
function contentTypeOf(file: string): string {
  return file.endsWith(".json") ? "application/json" : "application/x-ndjson";
}

/** The session id a pi JSONL file's header names (the session it was exported from), if any. */
function headerSessionId(body: Buffer): string | undefined {
  const end = body.indexOf(10);
  try {
    const header: unknown = JSON.parse(body.subarray(0, end === -1 ? body.length : end).toString("utf8"));
    if (typeof header !== "object" || header === null) return undefined;
    const { type, id } = header as { type?: unknown; id?: unknown };
    return type === "session" && typeof id === "string" && id ? id : undefined;
  } catch {
    return undefined;
  }
}

export const importCommand: Command = {
  usage: "keel import <file>",
  summary: "import a pi JSONL session, session JSON or session archive (.tar.gz) as a new session",
  async run(argv, context) {
    const parsed = parseCommand(argv, {}, { min: 1, max: 1, names: "<file>" }, context);
    const [file] = parsed.positionals as [string];
    let body: Buffer;
    try {
      body = readFileSync(file === "-" ? 0 : file);
    } catch (error) {
      throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
    }
    const { client } = parsed;
    // The file goes as it is (pi JSONL, session JSON or an archive): the typed client's `json`
    // would re-encode it, so the body is given raw.
    const contentType = isGzip(body) ? "application/gzip" : contentTypeOf(file);
    const answer = await client.json(
      client.api.v1.sessions.import.$post(
        {},
        { headers: { "content-type": contentType }, init: { body: new Uint8Array(body) } },
      ),
    );
    if (parsed.json) {
      printJson(context, answer);
      return EXIT.ok;
    }
    const count = answer.workspace?.files;
    const files = count === undefined ? "" : `, workspace of ${count} file${count === 1 ? "" : "s"}`;
    const source = file === "-" ? "standard input" : file;
    const origin = contentType === "application/x-ndjson" ? headerSessionId(body) : undefined;
    const from = origin ? `, exported from session ${origin}` : "";
    context.out.write(
      `imported ${source} as session ${answer.sessionId} (${answer.entryCount} entries${files}${from})\n`,
    );
    for (const warning of answer.warnings ?? []) context.err(`warning: ${warning}\n`);
    return EXIT.ok;
  },
};
