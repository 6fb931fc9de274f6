/**
 * `keel run` and `keel send|steer|followup|interrupt`: deliver a message to a session (starting
 * a run when it is idle), optionally following the run's events until it ends. The run options
 * (model, system prompt, tools, tool policy, hooks, limits, workspace) apply when the message
 * starts a run.
 */
import { randomUUID } from "node:crypto";
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { type ApiClient, EXIT, type ExitCode, UsageError } from "../../api-client/client";
import {
  type Command,
  type CommandContext,
  integerOption,
  listOption,
  type OptionValues,
  parseCommand,
  printJson,
} from "../command";
import { EventPrinter } from "../render";
import { agentsFrom } from "./agents-option";
import { EventDetails, followRun } from "./follow";
import type { MessageBody } from "./message-body";

type Delivery = NonNullable<MessageBody["delivery"]>;
type ToolPolicy = NonNullable<MessageBody["policy"]>;
type PolicyRule = NonNullable<ToolPolicy["rules"]>[number];
type PolicyAction = PolicyRule["action"];

/** Delivers one message; resolves with the API's answer (`delivery: started | steered | …`). */
export function deliverMessage(client: ApiClient, sessionId: string, body: MessageBody) {
  return client.json(
    client.api.v1.sessions[":sessionId"].messages.$post({ param: { sessionId }, json: body }),
  );
}

const POLICY_ACTIONS: readonly PolicyAction[] = ["allow", "ask", "deny"];

/** Options of the message commands: following the run, and the run options. */
export const MESSAGE_OPTIONS = {
  follow: { type: "boolean", short: "f", default: false },
  "no-stream": { type: "boolean", default: false },
  model: { type: "string", short: "m", multiple: true },
  system: { type: "string" },
  tools: { type: "string" },
  allow: { type: "string", multiple: true },
  ask: { type: "string", multiple: true },
  deny: { type: "string", multiple: true },
  "default-policy": { type: "string" },
  "approval-timeout": { type: "string" },
  hooks: { type: "string" },
  "max-turns": { type: "string" },
  "max-tool-calls": { type: "string" },
  "max-cost": { type: "string" },
  "max-tokens": { type: "string" },
  "workspace-dir": { type: "string" },
  "workspace-git": { type: "string" },
  "workspace-ref": { type: "string" },
  env: { type: "string" },
  mcp: { type: "string", multiple: true },
  secret: { type: "string", multiple: true },
  agents: { type: "string" },
} as const;

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;
const DURATION_UNITS_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/** `90`, `90s`, `15m`, `2h`, `500ms` → milliseconds (a bare number is seconds). */
function durationMs(text: string, name: string): number {
  const match = DURATION.exec(text.trim());
  if (!match) throw new UsageError(`--${name} must be a duration such as 90s, 15m or 2h (got ${text})`);
  const unit = (match[2] ?? "s") as keyof typeof DURATION_UNITS_MS;
  return Math.round(Number(match[1]) * DURATION_UNITS_MS[unit]);
}

function commaList(value: string | boolean | string[] | undefined): string[] | undefined {
  if (typeof value !== "string") return undefined;
  return value
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
}

/**
 * The tool policy from `--allow/--ask/--deny TOOL[:REGEX]` (repeatable; the regular expression
 * is matched against the call's JSON arguments), `--default-policy` and `--approval-timeout`.
 * Rules keep the order given per action: allow, then ask, then deny.
 */
function policyFrom(values: OptionValues): ToolPolicy | undefined {
  const rules: PolicyRule[] = [];
  for (const action of POLICY_ACTIONS) {
    for (const spec of listOption(values[action])) {
      const colon = spec.indexOf(":");
      const tool = (colon < 0 ? spec : spec.slice(0, colon)).trim();
      if (!tool) throw new UsageError(`--${action} needs a tool name (or *), e.g. --${action} bash`);
      rules.push({ tool, action, ...(colon < 0 ? {} : { argumentsPattern: spec.slice(colon + 1) }) });
    }
  }
  const fallback = values["default-policy"];
  if (fallback !== undefined && !POLICY_ACTIONS.includes(fallback as PolicyAction))
    throw new UsageError("--default-policy must be allow, ask or deny");
  const timeout = values["approval-timeout"];
  if (rules.length === 0 && fallback === undefined && timeout === undefined) return undefined;
  return {
    rules,
    ...(typeof fallback === "string" ? { default: fallback as PolicyAction } : {}),
    ...(typeof timeout === "string" ? { approvalTimeoutMs: durationMs(timeout, "approval-timeout") } : {}),
  };
}

/** `--max-cost`: an amount of US dollars such as 0.50 (UsageError otherwise). */
export function costOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(value))
    throw new UsageError("--max-cost must be an amount of US dollars, e.g. 0.50");
  return Number(value);
}

function limitsFrom(values: OptionValues): MessageBody["limits"] {
  const maxTurns = integerOption(values["max-turns"] as string | undefined, "max-turns", 1);
  const maxToolCalls = integerOption(values["max-tool-calls"] as string | undefined, "max-tool-calls");
  const maxCostUsd = costOption(values["max-cost"] as string | undefined);
  const maxTokens = integerOption(values["max-tokens"] as string | undefined, "max-tokens");
  const limits = {
    ...(maxTurns !== undefined ? { maxTurns } : {}),
    ...(maxToolCalls !== undefined ? { maxToolCalls } : {}),
    ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
  };
  return Object.keys(limits).length > 0 ? limits : undefined;
}

/** The body of `POST /messages` from the command line. */
export function messageBody(
  text: string,
  delivery: Delivery,
  values: OptionValues,
  apiUrl: string,
): MessageBody {
  const body: MessageBody = { text, delivery };
  // Repeated, the models in order of preference: a failing turn goes to the next (docs/providers.md).
  const models = listOption(values.model);
  if (models.length === 1) body.model = models[0];
  else if (models.length > 1) body.model = models;
  if (typeof values.system === "string") body.systemPrompt = values.system;
  const tools = commaList(values.tools);
  if (tools) body.tools = tools;
  if (typeof values.agents === "string") body.agents = agentsFrom(values.agents, tools);
  const hooks = commaList(values.hooks);
  if (hooks) body.hooks = hooks;
  if (typeof values.env === "string") body.environment = values.env;
  const policy = policyFrom(values);
  if (policy) body.policy = policy;
  const limits = limitsFrom(values);
  if (limits) body.limits = limits;
  const mcp = listOption(values.mcp).map(mcpServerFrom);
  if (mcp.length > 0) body.mcpServers = mcp;
  const secrets = listOption(values.secret);
  if (secrets.length > 0) body.secrets = [...new Set(secrets)];
  const dir = values["workspace-dir"];
  const git = values["workspace-git"];
  if (typeof dir === "string" && typeof git === "string") {
    throw new UsageError("give either --workspace-dir or --workspace-git, not both");
  }
  if (typeof dir === "string") body.workspace = { type: "directory", path: checkedDirectory(dir, apiUrl) };
  if (typeof git === "string") {
    const ref = values["workspace-ref"];
    body.workspace = { type: "git", url: git, ...(typeof ref === "string" ? { ref } : {}) };
  }
  return body;
}

type McpServer = NonNullable<MessageBody["mcpServers"]>[number];

/**
 * One `--mcp name=https://…` (a Streamable HTTP server) or `--mcp name=command arg…` (a stdio
 * server the worker starts in the run's sandbox; words split at spaces, no quoting).
 */
export function mcpServerFrom(spec: string): McpServer {
  const equals = spec.indexOf("=");
  const name = spec.slice(0, Math.max(0, equals)).trim();
  const target = spec.slice(equals + 1).trim();
  if (equals < 0 || !name || !target)
    throw new UsageError(`--mcp needs name=command… or name=https://… (got ${JSON.stringify(spec)})`);
  if (/^https?:\/\//.test(target)) return { name, url: target };
  const [command, ...args] = target.split(/\s+/);
  return { name, command: command as string, ...(args.length > 0 ? { args } : {}) };
}

/**
 * `--workspace-dir` as the absolute path the worker copies. The path is on the worker's machine:
 * when the API is on this one (a loopback URL, as with `keel dev`), a path that is not a directory
 * here is a usage error now, not a run that fails later.
 */
function checkedDirectory(dir: string, apiUrl: string): string {
  const path = resolve(dir);
  const host = new URL(apiUrl).hostname;
  const local = host === "localhost" || host === "[::1]" || host.startsWith("127.");
  if (local && !statSync(path, { throwIfNoEntry: false })?.isDirectory()) {
    throw new UsageError(`--workspace-dir: ${path} is not a directory`);
  }
  return path;
}

/** What a person reads about a delivery. */
function deliveryLine(
  answer: { sessionId: string; delivery: string; workflowId: string; runId: string },
  asked: Delivery,
): string {
  const where = `(workflow ${answer.workflowId}, run ${answer.runId})`;
  if (answer.delivery === "started" && asked !== "auto")
    return `session ${answer.sessionId}: no run was live, so this message started a new run ${where}`;
  if (answer.delivery === "pending")
    return `session ${answer.sessionId}: recorded for the live run, which takes it when a worker picks it up (none answered yet) ${where}`;
  return `session ${answer.sessionId}: ${answer.delivery} ${where}`;
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
  const delivered = await deliverMessage(
    parsed.client,
    sessionId,
    messageBody(text, delivery, parsed.values, parsed.apiUrl),
  );
  if (parsed.json && !parsed.values.follow) {
    printJson(context, delivered);
    return EXIT.ok;
  }
  if (!parsed.json) context.out.write(`${deliveryLine(delivered, delivery)}\n`);
  else context.out.write(`${JSON.stringify({ type: "delivered", ...delivered })}\n`);
  if (!parsed.values.follow) return EXIT.ok;
  const status = await followRun(
    parsed.client,
    sessionId,
    0,
    new EventPrinter(context.out, parsed.json, sessionId),
    {
      details: parsed.json ? undefined : new EventDetails(parsed.client, sessionId),
      deltas: !parsed.values["no-stream"],
      err: context.err,
    },
  );
  return status === "completed" ? EXIT.ok : EXIT.failed;
}

const COMMON_FLAGS =
  "[--follow [--no-stream]] [--model M]... [--system TEXT] [--tools a,b] [--allow|--ask|--deny TOOL[:REGEX]]... [--default-policy allow|ask|deny] [--approval-timeout 10m] [--hooks a,b] [--max-turns N] [--max-tool-calls N] [--max-cost USD] [--max-tokens N] [--workspace-dir DIR | --workspace-git URL [--workspace-ref REF]] [--env NAME] [--mcp NAME=COMMAND…|NAME=URL]... [--secret NAME]... [--agents FILE]";

/** Explains the run options (shown by `keel run --help` and friends). */
export const RUN_OPTIONS_HELP = `Run options (they apply when the message starts a run):
  --model M, -m M          model id from the catalog (default: the server's); repeat it to name
                           models a turn fails over to, in order (--model A --model B)
  --system TEXT            system prompt
  --tools a,b              built-in tools the run may use (read, write, edit, bash, grep, find, ls)
  --allow/--ask/--deny TOOL[:REGEX]
                           tool policy rule, repeatable; REGEX is matched against the call's JSON
                           arguments (--ask bash asks before every bash call, --deny write refuses writes)
  --default-policy ACTION  what tools without a rule get (allow, ask or deny; default allow)
  --approval-timeout D     how long an ask waits for \`keel approve\` (90s, 15m, 2h; then it is refused)
  --hooks a,b              built-in hook sets: single-turn, read-only, stop-on-tool-error, …
  --max-turns N, --max-tool-calls N, --max-cost USD, --max-tokens N
                           limits of the run (the run ends when a turn or tool-call limit is
                           reached; at its cost or token budget, input and output tokens
                           counted, it pauses until \`keel resume\` or \`keel budget\`)
  --workspace-dir DIR | --workspace-git URL [--workspace-ref REF]
                           what the run's workspace starts from
  --env NAME               run the tools in environment NAME (keel env list; default: the worker)
  --mcp NAME=COMMAND ARGS… | --mcp NAME=https://…
                           an MCP tool server, repeatable: a command the worker starts inside the
                           run's sandbox (the workspace is /workspace), or a Streamable HTTP URL; the
                           model sees its tools as NAME__TOOL (docs/tools.md, "MCP servers")
  --secret NAME            a tenant secret the run's tool processes may use, repeatable (keel secret
                           list): inside the sandbox a placeholder, replaced by the egress proxy only
                           toward the secret's hosts (docs/tools.md, "Secrets")
  --agents FILE            sub-agents the run may delegate to with the task tool (needs task in
                           --tools): a JSON array of {name, description, systemPrompt?, model?,
                           tools?, maxTurns?} (docs/tools.md, "task")
  --follow, -f             show the run live until it ends (exit 1 if it fails or is aborted): the
                           answer as it is written (thinking dimmed), bash output as it comes
  --no-stream              with --follow: whole messages only, no live text
  --json                   one JSON object per line: every event, live deltas included`;

export const runCommand: Command = {
  usage: `keel run "<prompt>" [--session ID] ${COMMON_FLAGS}`,
  summary: "start a run (or steer the session's live one); --follow shows it live",
  help: RUN_OPTIONS_HELP,
  run: (argv, context) => deliver(argv, context, "auto", false),
};

function deliveryCommand(name: string, delivery: Delivery, summary: string): Command {
  return {
    usage: `keel ${name} <session> "<text>" ${COMMON_FLAGS}`,
    summary,
    help: RUN_OPTIONS_HELP,
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
  "steer the live run (read before its next model call); starts a run when none is live",
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
