/**
 * `keel replay <session> --from <entry>`: forks of the session at the entry, each started with the
 * same message (`POST …/replay`), optionally waited for and compared (docs/evals.md).
 */
import { readFileSync } from "node:fs";
import { EXIT, UsageError } from "../../api-client/client";
import { type Command, integerOption, parseCommand, printJson } from "../command";
import type { Output } from "../output";
import { EventPrinter } from "../render";
import { type ComparisonRow, comparisonTable, readComparisonRow } from "./compare";
import { followRun } from "./follow";
import { MESSAGE_OPTIONS, messageBody, RUN_OPTIONS_HELP } from "./message";
import { entryIdOf } from "./tree";

const { follow: _follow, "no-stream": _noStream, ...RUN_OPTIONS } = MESSAGE_OPTIONS;

const REPLAY_OPTIONS = {
  ...RUN_OPTIONS,
  from: { type: "string" },
  times: { type: "string" },
  message: { type: "string" },
  "system-prompt-file": { type: "string" },
  wait: { type: "boolean", default: false },
} as const;

/** Where the events of a run waited for go: nowhere (the comparison says how it went). */
const silent: Output = { write: () => undefined, isTTY: false };

/** The text of `--system-prompt-file` (a usage error when unreadable or given with --system). */
function systemPromptFrom(path: string, system: unknown): string {
  if (typeof system === "string")
    throw new UsageError("give either --system or --system-prompt-file, not both");
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new UsageError(
      `--system-prompt-file: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? error})`,
    );
  }
}

export const replayCommand: Command = {
  usage:
    'keel replay <session> --from <entry> [--times N] [--message "<text>"] [--model M]... [--system-prompt-file F | --system TEXT] [--agents F] [run options] [--wait] [--json]',
  summary: "fork the session at an entry N times and run each fork again; --wait compares the runs",
  help: `<entry> is an entry's id, its index (the first column of \`keel entries\`) or the start of its id.
A user message: each fork ends before it and is sent its text again (or --message). Any other
entry: each fork ends at it and is sent --message, else the next user message after it.
Prints one line per started run: the fork's session id. --wait waits for every run to end and
then prints \`keel compare\` of the forks (exit 1 when a run did not complete).

  --times N                forks, each with its own run (1 to 20, default 1)
  --message TEXT           the message every run is sent
  --system-prompt-file F   the system prompt, read from F (instead of --system)
  --wait                   wait for the runs to end, then compare them

${RUN_OPTIONS_HELP.split("\n  --follow")[0]}`,
  async run(argv, context) {
    const parsed = parseCommand(argv, REPLAY_OPTIONS, { min: 1, max: 1, names: "<session>" }, context);
    const [sessionId] = parsed.positionals as [string];
    const { values, client } = parsed;
    if (typeof values.from !== "string") throw new UsageError("--from <entry> is required");
    const times = integerOption(values.times as string | undefined, "times", 1);
    const message = values.message;
    if (typeof message === "string" && !message.trim()) throw new UsageError("--message is empty");
    const { text: _text, delivery: _delivery, ...settings } = messageBody("-", "auto", values, parsed.apiUrl);
    const promptFile = values["system-prompt-file"];
    if (typeof promptFile === "string") settings.systemPrompt = systemPromptFrom(promptFile, values.system);
    const fromEntryId = await entryIdOf(client, sessionId, values.from);
    const answer = await client.json(
      client.api.v1.sessions[":sessionId"].replay.$post({
        param: { sessionId },
        json: {
          fromEntryId,
          ...(times !== undefined ? { times } : {}),
          ...(typeof message === "string" ? { message } : {}),
          ...(Object.keys(settings).length > 0 ? { settings } : {}),
        },
      }),
    );
    const started = answer.runs.filter((run) => run.runId !== undefined);
    const refused = answer.runs.filter((run) => run.runId === undefined);
    if (!parsed.json) {
      for (const run of started) context.out.write(`${run.sessionId}\n`);
      for (const run of refused)
        context.err(
          `keel: fork ${run.sessionId} made, its run not started (${run.outcome}): ${run.detail ?? ""}\n`,
        );
    }
    if (!values.wait) {
      if (parsed.json) printJson(context, answer);
      return refused.length > 0 ? EXIT.refused : EXIT.ok;
    }
    let allCompleted = true;
    for (const run of started) {
      const status = await followRun(client, run.sessionId, 0, new EventPrinter(silent, true));
      if (status !== "completed") allCompleted = false;
    }
    const rows: ComparisonRow[] = [];
    for (const run of started) rows.push(await readComparisonRow(client, run.sessionId));
    if (parsed.json) printJson(context, { ...answer, comparison: rows });
    else if (rows.length > 0) context.out.write(`\n${comparisonTable(rows)}`);
    if (refused.length > 0) return EXIT.refused;
    return allCompleted ? EXIT.ok : EXIT.failed;
  },
};
