/** `keel export` and `keel import`: sessions as pi JSONL files (or tunacode session JSON (pydantic-ai wire messages)). */
import { readFileSync, writeFileSync } from "node:fs";
import { EXIT, UsageError } from "../client";
import { type Command, parseCommand, printJson } from "../command";

export const exportCommand: Command = {
  usage: "keel export <session> [-o FILE]",
  summary: "write the session as one pi JSONL file (stdout without -o)",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      { output: { type: "string", short: "o" } },
      { min: 1, max: 1, names: "<session>" },
      context,
    );
    const [sessionId] = parsed.positionals as [string];
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

/** `.json` files are read as tunacode session JSON (pydantic-ai wire messages); anything else as pi JSONL. */
function contentTypeOf(file: string): string {
  return file.endsWith(".json") ? "application/json" : "application/x-ndjson";
}

export const importCommand: Command = {
  usage: "keel import <file>",
  summary: "import a pi JSONL session (or session JSON) as a new session",
  async run(argv, context) {
    const parsed = parseCommand(argv, {}, { min: 1, max: 1, names: "<file>" }, context);
    const [file] = parsed.positionals as [string];
    let text: string;
    try {
      text = readFileSync(file === "-" ? 0 : file, "utf8");
    } catch (error) {
      throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
    }
    const { client } = parsed;
    // The file goes as it is (pi JSONL or session JSON): the typed client's `json` would
    // re-encode it, so the body is given raw.
    const answer = await client.json(
      client.api.v1.sessions.import.$post(
        {},
        { headers: { "content-type": contentTypeOf(file) }, init: { body: text } },
      ),
    );
    if (parsed.json) {
      printJson(context, answer);
      return EXIT.ok;
    }
    context.out.write(`imported as session ${answer.sessionId} (${answer.entryCount} entries)\n`);
    for (const warning of answer.warnings ?? []) context.err(`warning: ${warning}\n`);
    return EXIT.ok;
  },
};
