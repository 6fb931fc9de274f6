#!/usr/bin/env node
/**
 * The `keel` command: a client of the HTTP API (KEEL_API_URL / KEEL_API_KEY, or --url / --key)
 * plus `keel dev`, the local stack. Exit codes: 0 ok, 1 run failed or aborted / server error,
 * 2 usage error, 3 not found or refused.
 */
import { ApiError, EXIT, type ExitCode, exitCodeOf, hintFor, UsageError } from "../api-client/client";
import { describeUnknownSettings, unknownSettings } from "../core/env-settings";
import type { Command, CommandContext } from "./command";
import { adminCommand, usageCommand } from "./commands/admin";
import { budgetCommand, resumeCommand } from "./commands/budget";
import { compareCommand } from "./commands/compare";
import { abortCommand, approveCommand } from "./commands/control";
import { deleteCommand } from "./commands/delete";
import { envCommand, runnerCommand } from "./commands/environments";
import { evalCommand } from "./commands/eval";
import { eventsCommand } from "./commands/events";
import { mcpCommand } from "./commands/mcp";
import { followUpCommand, interruptCommand, runCommand, sendCommand, steerCommand } from "./commands/message";
import { replayCommand } from "./commands/replay";
import { scheduleCommand } from "./commands/schedule";
import { secretCommand } from "./commands/secret";
import { sessionsCommand, showCommand } from "./commands/sessions";
import { exportCommand, importCommand } from "./commands/transfer";
import { branchCommand, compactCommand, entriesCommand, forkCommand, labelCommand } from "./commands/tree";
import { webhookCommand } from "./commands/webhook";
import { stdoutOutput } from "./output";

const COMMANDS: Record<string, Command> = {
  run: runCommand,
  send: sendCommand,
  steer: steerCommand,
  followup: followUpCommand,
  interrupt: interruptCommand,
  abort: abortCommand,
  approve: approveCommand,
  resume: resumeCommand,
  budget: budgetCommand,
  sessions: sessionsCommand,
  show: showCommand,
  events: eventsCommand,
  entries: entriesCommand,
  fork: forkCommand,
  branch: branchCommand,
  label: labelCommand,
  compact: compactCommand,
  replay: replayCommand,
  compare: compareCommand,
  export: exportCommand,
  import: importCommand,
  delete: deleteCommand,
  schedule: scheduleCommand,
  webhook: webhookCommand,
  env: envCommand,
  runner: runnerCommand,
  mcp: mcpCommand,
  secret: secretCommand,
  eval: evalCommand,
  usage: usageCommand,
  admin: adminCommand,
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length), 3);
  const lines = Object.entries(COMMANDS).map(
    ([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`,
  );
  return `Usage: keel <command> [options]

Commands:
  ${"dev".padEnd(width)}  run the local stack and a demo until Ctrl-C (keel dev --help)
${lines.join("\n")}

Options for every API command:
  --url URL   API base URL (default $KEEL_API_URL, else http://127.0.0.1:8787)
  --key KEY   API key (default $KEEL_API_KEY)
  --json      machine-readable output (JSON; events as JSON lines)

Exit codes: 0 ok · 1 run failed or aborted, server error · 2 usage error · 3 not found or refused
\`keel <command> --help\` shows a command's options (run options: \`keel run --help\`).
`;
}

export async function main(argv: string[], context: CommandContext): Promise<ExitCode> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    context.out.write(usage());
    return EXIT.ok;
  }
  const wantsHelp = rest.includes("--help") || rest.includes("-h");
  if (name === "dev") {
    // Loaded only here: the dev stack (API server, S3 and Temporal clients) is most of the CLI's
    // modules, and no other command needs it.
    // `require`, not `import()`: the sources run through tsx's CommonJS loader.
    const { devUsage, runDev }: typeof import("./dev") = require("./dev");
    if (wantsHelp) {
      context.out.write(devUsage);
      return EXIT.ok;
    }
    return runDev(rest, context.env, context.out);
  }
  const command = COMMANDS[name];
  if (!command) throw new UsageError(`unknown command '${name}'`);
  if (wantsHelp) {
    context.out.write(
      `Usage: ${command.usage}\n\n${command.summary}\n${command.help ? `\n${command.help}\n` : ""}`,
    );
    return EXIT.ok;
  }
  try {
    return await command.run(rest, context);
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(`${error.message}\nUsage: ${command.usage}`);
    throw error;
  }
}

/** Errors as one line (or a problem+json document with --json) on stderr. */
function report(error: unknown, json: boolean): void {
  if (json && error instanceof ApiError) {
    process.stderr.write(
      `${JSON.stringify({ error: error.slug, status: error.status, message: error.message, problem: error.body })}\n`,
    );
    return;
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`keel: ${message}\n`);
  const hint = error instanceof ApiError ? hintFor(error) : undefined;
  if (hint) process.stderr.write(`${hint}\n`);
  if (error instanceof UsageError && !message.includes("Usage:"))
    process.stderr.write("Run `keel --help` for usage.\n");
}

/** Exits once everything written to stdout has been flushed (pipes are asynchronous). */
function exitAfterFlush(code: number): void {
  process.stdout.write("", () => process.exit(code));
}

/**
 * Runs `keel` with the process's arguments and exits with its code. The one read of this
 * process's environment: commands get it as `context.env`.
 */
export function cli(): void {
  const argv = process.argv.slice(2);
  for (const line of describeUnknownSettings(unknownSettings(process.env)))
    process.stderr.write(`keel: warning: ${line}\n`);
  main(argv, {
    env: process.env,
    out: stdoutOutput,
    err: (text) => process.stderr.write(text),
  }).then(exitAfterFlush, (error: unknown) => {
    report(error, argv.includes("--json"));
    exitAfterFlush(exitCodeOf(error));
  });
}

if (require.main === module) cli();
