/**
 * `keel secret set|list|delete`: the tenant's secrets (docs/tools.md, "Secrets"). `set` reads the
 * value from standard input, never from the command line, where `ps` and shell history would
 * show it: piped (`printf %s "$TOKEN" | keel secret set NAME --host api.github.com`), or typed
 * without echo with `--prompt`. A terminal on standard input without `--prompt` is refused, so
 * a forgotten pipe never waits silently for input.
 */
import type { ApiClient } from "../../api-client/client";
import { EXIT, type ExitCode, UsageError } from "../../api-client/client";
import {
  SECRET_PLACEMENTS,
  type SecretMetadata,
  type SecretPlacement,
  secretNameRefusal,
  secretValueRefusal,
} from "../../vault/types";
import { type Command, type CommandContext, parseCommand, printJson } from "../command";

/** What `set` reads the value from: the process's standard input, or a test's stream. */
export interface SecretInput extends AsyncIterable<Buffer | string> {
  isTTY?: boolean;
  setRawMode?: (mode: boolean) => unknown;
}

const SET_OPTIONS = {
  host: { type: "string", multiple: true },
  in: { type: "string", multiple: true },
  prompt: { type: "boolean", default: false },
} as const;

function describe(secret: SecretMetadata): string {
  return `${secret.name}  v${secret.version}  hosts ${secret.hosts.join(",")}  in ${secret.in.join(",")}  updated ${secret.updatedAt}`;
}

function validName(name: string): string {
  const refusal = secretNameRefusal(name);
  if (refusal) throw new UsageError(refusal);
  return name;
}

/** All of a piped input, without the line break(s) a shell's `echo` adds at its end. */
async function readPiped(input: SecretInput): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/[\r\n]+$/, "");
}

/** One line typed on the terminal with echo off (raw mode); Ctrl-C or Ctrl-D abandons it. */
async function readTyped(input: SecretInput, context: CommandContext, name: string): Promise<string> {
  context.err(`value of ${name} (not shown; Enter ends it): `);
  input.setRawMode?.(true);
  let typed = "";
  try {
    for await (const chunk of input) {
      for (const char of typeof chunk === "string" ? chunk : chunk.toString("utf8")) {
        if (char === "\r" || char === "\n") return typed;
        if (char === "\u0003" || char === "\u0004") throw new UsageError("no value typed");
        if (char === "\u007f" || char === "\b") typed = typed.slice(0, -1);
        else typed += char;
      }
    }
    return typed;
  } finally {
    input.setRawMode?.(false);
    context.err("\n");
  }
}

async function set(argv: string[], context: CommandContext, input: () => SecretInput): Promise<ExitCode> {
  const parsed = parseCommand(argv, SET_OPTIONS, { min: 1, max: 1, names: "<NAME>" }, context);
  const name = validName(parsed.positionals[0] as string);
  const hosts = (parsed.values.host as string[] | undefined) ?? [];
  if (hosts.length === 0) throw new UsageError("name at least one --host the value may be sent to");
  const placements = (parsed.values.in as string[] | undefined) ?? [];
  for (const placement of placements)
    if (!SECRET_PLACEMENTS.includes(placement as SecretPlacement))
      throw new UsageError(`--in must be ${SECRET_PLACEMENTS.join(" or ")}`);
  const stdin = input();
  let value: string;
  if (stdin.isTTY) {
    if (!parsed.values.prompt)
      throw new UsageError(
        `the value is read from standard input: pipe it (printf %s "$VALUE" | keel secret set ${name} --host …), or pass --prompt to type it without echo`,
      );
    value = await readTyped(stdin, context, name);
  } else value = await readPiped(stdin);
  const refusal = secretValueRefusal(value);
  if (refusal) throw new UsageError(refusal);
  const { secret, created } = await parsed.client.setSecret(name, {
    value,
    hosts,
    ...(placements.length > 0 ? { in: placements as SecretPlacement[] } : {}),
  });
  if (parsed.json) printJson(context, { ...secret, created });
  else context.out.write(`${created ? "created" : "rotated"} ${describe(secret)}\n`);
  return EXIT.ok;
}

async function list(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(argv, {}, { min: 0, max: 0, names: "no arguments" }, context);
  const secrets = await parsed.client.listSecrets();
  if (parsed.json) printJson(context, { secrets });
  else if (secrets.length === 0) context.out.write("no secrets\n");
  else for (const secret of secrets) context.out.write(`${describe(secret)}\n`);
  return EXIT.ok;
}

async function remove(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(argv, {}, { min: 1, max: 1, names: "<NAME>" }, context);
  const name = validName(parsed.positionals[0] as string);
  const client: ApiClient = parsed.client;
  await client.deleteSecret(name);
  if (parsed.json) printJson(context, { name, deleted: true });
  else context.out.write(`deleted secret ${name}\n`);
  return EXIT.ok;
}

const HELP = `Subcommands:
  set NAME --host H [--host H2 …] [--in header|basic-auth …] [--prompt]
                 create the secret, or rotate it (version + 1; the next tool call uses it).
                 The value is read from standard input, never from the command line:
                   printf %s "$TOKEN" | keel secret set GITHUB_TOKEN --host api.github.com
                 --prompt: type it on the terminal without echo (without it a terminal on
                 standard input is refused). --in: where the egress proxy puts it in requests to
                 the hosts (default both: any header value, the user or password of Basic auth)
  list           the secrets: name, version, hosts, placements, last change (never values)
  delete NAME    delete it: calls from the next one on no longer get the value

A run names the secrets it may use (its \`secrets\` setting); inside its sandbox each is an
environment variable holding a placeholder that the egress proxy swaps for the value only in
HTTPS requests to the secret's hosts (docs/tools.md, "Secrets").`;

/** The command over `input` (the process's standard input unless a test gives another). */
export function secretCommandWith(input: () => SecretInput): Command {
  return {
    usage: "keel secret set|list|delete …",
    summary: "the tenant's secrets: values the agent uses through the egress proxy and never sees",
    help: HELP,
    run(argv, context) {
      const [sub, ...rest] = argv;
      switch (sub) {
        case "set":
          return set(rest, context, input);
        case "list":
          return list(rest, context);
        case "delete":
          return remove(rest, context);
        default:
          throw new UsageError(sub === undefined ? "name a subcommand" : `unknown subcommand '${sub}'`);
      }
    },
  };
}

export const secretCommand = secretCommandWith(() => process.stdin as SecretInput);
