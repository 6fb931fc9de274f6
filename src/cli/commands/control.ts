/** `keel abort` and `keel approve`: decisions about a session's live run. */
import { EXIT, UsageError } from "../../api-client/client";
import { type Command, parseCommand, printJson } from "../command";

export const abortCommand: Command = {
  usage: "keel abort <session> [--reason TEXT]",
  summary: "stop the session's live run",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      { reason: { type: "string" } },
      { min: 1, max: 1, names: "<session>" },
      context,
    );
    const [sessionId] = parsed.positionals as [string];
    const reason = parsed.values.reason;
    const { client } = parsed;
    const answer = await client.json(
      client.api.v1.sessions[":sessionId"].abort.$post({
        param: { sessionId },
        json: typeof reason === "string" ? { reason } : {},
      }),
    );
    if (parsed.json) printJson(context, answer);
    else context.out.write(abortReport(sessionId, answer));
    return EXIT.ok;
  },
};

/**
 * What `keel abort` prints: the request, then the queued messages the run will not read (one per
 * line, so they can be sent again), or that the run has not answered yet.
 */
function abortReport(
  sessionId: string,
  // `answered` is optional: a server older than the abort update answers `{accepted: true}` only.
  answer: { answered?: boolean; unprocessed?: Array<{ text: string }> },
): string {
  const lines = [`abort requested for session ${sessionId}`];
  const unprocessed = answer.unprocessed ?? [];
  if (answer.answered === false) {
    lines.push("the run has not answered yet; its agent_end event will list any unprocessed messages");
  } else if (unprocessed.length > 0) {
    lines.push(`${unprocessed.length} queued message(s) were not processed:`);
    for (const message of unprocessed) lines.push(`  ${JSON.stringify(message.text)}`);
  }
  return `${lines.join("\n")}\n`;
}

function parseArgsJson(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError("--args must be a JSON object");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new UsageError("--args must be a JSON object");
  }
  return value as Record<string, unknown>;
}

export const approveCommand: Command = {
  usage: "keel approve <session> <toolCallId> [--reject] [--args JSON] [--reason TEXT]",
  summary: "approve (or --reject) a tool call waiting for a decision; --args replaces its arguments",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      { reject: { type: "boolean", default: false }, args: { type: "string" }, reason: { type: "string" } },
      { min: 2, max: 2, names: "<session> <toolCallId>" },
      context,
    );
    const [sessionId, toolCallId] = parsed.positionals as [string, string];
    const { reject, args, reason } = parsed.values;
    if (reject && typeof args === "string")
      throw new UsageError("--args edits an approved call; not with --reject");
    const body = {
      decision: reject ? ("reject" as const) : ("approve" as const),
      ...(typeof args === "string" ? { args: parseArgsJson(args) } : {}),
      ...(typeof reason === "string" ? { reason } : {}),
    };
    const { client } = parsed;
    const answer = await client.json(
      client.api.v1.sessions[":sessionId"].approvals[":toolCallId"].$post({
        param: { sessionId, toolCallId },
        json: body,
      }),
    );
    if (parsed.json) printJson(context, answer);
    else
      context.out.write(`${body.decision === "reject" ? "rejected" : "approved"} tool call ${toolCallId}\n`);
    return EXIT.ok;
  },
};
