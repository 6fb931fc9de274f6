/**
 * What every `keel` command shares: option parsing with `util.parseArgs` (the API URL and key,
 * `--json`), the API client, and JSON or human output.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { ApiClient, type ExitCode, UsageError } from "../api-client/client";
import { DEFAULT_API_URL } from "../api-client/settings";
import type { Output } from "./output";

type OptionSpecs = NonNullable<ParseArgsConfig["options"]>;

const GLOBAL_OPTIONS = {
  url: { type: "string" },
  key: { type: "string" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const satisfies OptionSpecs;

export interface CommandContext {
  env: NodeJS.ProcessEnv;
  out: Output;
  /** Diagnostics and progress that must not mix with `--json` output. */
  err: (text: string) => void;
}

export interface Command {
  /** `keel <name> …` as shown in the help. */
  usage: string;
  summary: string;
  /** More on the options, shown by `keel <name> --help`. */
  help?: string;
  run(argv: string[], context: CommandContext): Promise<ExitCode>;
}

/** Option values by name: strings, booleans, lists (`multiple: true`), or undefined when not given. */
export type OptionValues = Record<string, string | boolean | string[] | undefined>;

export interface Parsed {
  values: OptionValues;
  positionals: string[];
  client: ApiClient;
  /** The API's base URL (from --url or KEEL_API_URL). */
  apiUrl: string;
  json: boolean;
}

/**
 * Parses `argv` against the command's options plus the global ones; unknown options and a wrong
 * number of positionals are usage errors. The API URL and key come from the flags, else from
 * KEEL_API_URL / KEEL_API_KEY.
 */
export function parseCommand(
  argv: string[],
  options: OptionSpecs,
  positionals: { min: number; max: number; names: string },
  context: CommandContext,
): Parsed {
  let parsed: { values: OptionValues; positionals: string[] };
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, ...GLOBAL_OPTIONS },
      allowPositionals: true,
      strict: true,
    }) as { values: OptionValues; positionals: string[] };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const count = parsed.positionals.length;
  if (count < positionals.min || count > positionals.max) {
    throw new UsageError(`expected ${positionals.names}`);
  }
  const values = parsed.values;
  const baseUrl = (values.url as string | undefined) ?? context.env.KEEL_API_URL ?? DEFAULT_API_URL;
  if (!/^https?:\/\//.test(baseUrl))
    throw new UsageError(`the API URL must start with http:// or https:// (got ${baseUrl})`);
  const apiKey = (values.key as string | undefined) ?? context.env.KEEL_API_KEY;
  return {
    values,
    positionals: parsed.positionals,
    client: new ApiClient({ baseUrl, apiKey }),
    apiUrl: baseUrl,
    json: Boolean(values.json),
  };
}

/** Prints `value` as one JSON document (for `--json`). */
export function printJson(context: CommandContext, value: unknown): void {
  context.out.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Parses an integer option; a usage error otherwise. */
export function integerOption(value: string | undefined, name: string, min = 0): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min)
    throw new UsageError(`--${name} must be an integer ≥ ${min}`);
  return Number(value);
}

/** Option values of `multiple: true` string options: the list given (empty when none). */
export function listOption(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}
