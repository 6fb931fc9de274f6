/**
 * `keel run` and `keel send|steer|followup|interrupt`: deliver a message to a session (starting
 * a run when it is idle), optionally following the run's events until it ends.
 */
import { randomUUID } from "node:crypto";
import { resolve } from "node:path";
import { EXIT, type ExitCode, UsageError } from "../client";
import { type Command, type CommandContext, parseCommand, printJson, sessionPath } from "../command";
import { EventPrinter } from "../render";
import { EventDetails, followRun } from "./follow";

type Delivery = "auto" | "steer" | "followUp" | "interrupt";

interface Delivered {
  sessionId: string;
  runId: string;
  workflowId: string;
  delivery: "started" | "steered" | "queued" | "interrupted";
  queueLength: number;
}

const MESSAGE_OPTIONS = {
  follow: { type: "boolean", short: "f", default: false },
  model: { type: "string", short: "m" },
  system: { type: "string" },
  tools: { type: "string" },
  "workspace-dir": { type: "string" },
  "workspace-git": { type: "string" },
  "workspace-ref": { type: "string" },
} as const;

/** The body of `POST /messages` from the command line. */
export function messageBody(
  text: string,
  delivery: Delivery,
  values: Record<string, string | boolean | undefined>,
) {
  const body: Record<string, unknown> = { text, delivery };
  if (typeof values.model === "string") body.model = values.model;
  if (typeof values.system === "string") body.systemPrompt = values.system;
  if (typeof values.tools === "string")
    body.tools = values.tools
      .split(",")
      .map((tool) => tool.trim())
      .filter(Boolean);
  const dir = values["workspace-dir"];
  const git = values["workspace-git"];
  if (typeof dir === "string" && typeof git === "string") {
    throw new UsageError("give either --workspace-dir or --workspace-git, not both");
  }
  if (typeof dir === "string") body.workspace = { type: "directory", path: resolve(dir) };
  if (typeof git === "string") {
    const ref = values["workspace-ref"];
    body.workspace = { type: "git", url: git, ...(typeof ref === "string" ? { ref } : {}) };
  }
  return body;
}

async function deliver(
  argv: string[],
  context: CommandContext,
  delivery: Delivery,
  sessionFromPositional: boolean,
): Promise<ExitCode> {
  const parsed = parseCommand(
    argv,
    sessionFromPositional ? MESSAGE_OPTIONS : { ...MESSAGE_OPTIONS, session: { type: "string", short: "s" } },
    sessionFromPositional
      ? { min: 2, max: 2, names: "<session> <text>" }
      : { min: 1, max: 1, names: "<prompt>" },
    context,
  );
  const [first, second] = parsed.positionals as [string, string | undefined];
  const sessionId = sessionFromPositional
    ? first
    : typeof parsed.values.session === "string"
      ? parsed.values.session
      : `s-${randomUUID()}`;
  const text = sessionFromPositional ? (second as string) : first;
  if (!text.trim()) throw new UsageError("the message text is empty");
  const delivered = await parsed.client.request<Delivered>("POST", sessionPath(sessionId, "/messages"), {
    json: messageBody(text, delivery, parsed.values),
  });
  if (parsed.json && !parsed.values.follow) {
    printJson(context, delivered);
    return EXIT.ok;
  }
  if (!parsed.json) {
    context.out.write(
      `session ${delivered.sessionId}: ${delivered.delivery} (workflow ${delivered.workflowId}, run ${delivered.runId})\n`,
    );
  } else {
    context.out.write(`${JSON.stringify({ type: "delivered", ...delivered })}\n`);
  }
  if (!parsed.values.follow) return EXIT.ok;
  const status = await followRun(parsed.client, sessionId, 0, new EventPrinter(context.out, parsed.json), {
    details: parsed.json ? undefined : new EventDetails(parsed.client, sessionId),
  });
  return status === "completed" ? EXIT.ok : EXIT.failed;
}

const COMMON_FLAGS =
  "[--follow] [--model M] [--system TEXT] [--tools a,b] [--workspace-dir DIR | --workspace-git URL [--workspace-ref REF]]";

export const runCommand: Command = {
  usage: `keel run "<prompt>" [--session ID] ${COMMON_FLAGS}`,
  summary: "start a run (or steer the session's live one); --follow shows it live",
  run: (argv, context) => deliver(argv, context, "auto", false),
};

function deliveryCommand(name: string, delivery: Delivery, summary: string): Command {
  return {
    usage: `keel ${name} <session> "<text>" ${COMMON_FLAGS}`,
    summary,
    run: (argv, context) => deliver(argv, context, delivery, true),
  };
}

export const sendCommand = deliveryCommand(
  "send",
  "auto",
  "send a message: starts a run when idle, steers when busy",
);
export const steerCommand = deliveryCommand(
  "steer",
  "steer",
  "steer the live run (read before its next model call)",
);
export const followUpCommand = deliveryCommand(
  "followup",
  "followUp",
  "queue a message for when the run would stop",
);
export const interruptCommand = deliveryCommand(
  "interrupt",
  "interrupt",
  "stop the current step and deliver the message",
);
