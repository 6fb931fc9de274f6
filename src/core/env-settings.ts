/**
 * How a process reads its settings: each process kind (API, worker, runner, CLI, `keel dev`) has
 * one schema of environment variables, composed of the shapes below it, parsed once at its entry
 * point; nothing below an entry point reads the environment. Every field carries its description
 * (`.describe()`), from which docs/configuration.md is generated (`npm run settings:doc`).
 */
import { z } from "zod";
import { SETTING_NAMES } from "./setting-names";

/** Environment variables of one part, each with its schema and description. */
export type SettingsShape = Record<string, z.ZodType>;

/** A yes/no variable: "true" or "1", "false" or "0". */
export const booleanFlag = z
  .enum(["true", "false", "1", "0"])
  .transform((value) => value === "true" || value === "1");

/** One line naming every invalid variable and why, never its value (it may be a secret). */
function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join(".") || "(value)"}: ${issue.message}`).join("; ");
}

/**
 * Variables no process reads any more, with what replaced them: a process refuses to start while
 * one is set (it would otherwise be ignored in silence), and `keel` says what replaced it.
 */
export const RETIRED_SETTINGS: Readonly<Record<string, string>> = {
  KEEL_SLACK_TENANT:
    'replaced by KEEL_SLACK_TEAMS, which maps each Slack team to its tenant (e.g. {"T0123ABCD":"acme"}); see docs/integrations.md',
  KEEL_MCP_SECRETS:
    'replaced by tenant secrets: each tenant stores its own (keel secret set NAME --host HOST) and its MCP servers name them as {secret: NAME}; an operator-wide value any run could name is no longer offered; see docs/tools.md, "Secrets"',
};

/**
 * `env` parsed with `shape`; throws `Invalid <what> configuration: …` naming every invalid
 * variable (never its value), or a retired one that is set.
 */
export function parseSettings<Shape extends SettingsShape>(
  shape: Shape,
  env: NodeJS.ProcessEnv,
  what: string,
): z.infer<z.ZodObject<Shape>> {
  const retired = Object.keys(RETIRED_SETTINGS).find((name) => env[name] !== undefined);
  if (retired) throw new Error(`Invalid ${what} configuration: ${retired} is ${RETIRED_SETTINGS[retired]}`);
  const parsed = z.object(shape).safeParse(env);
  if (!parsed.success) throw new Error(`Invalid ${what} configuration: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** Variables named `<setting>_SECRET_ARN` are resolved into the setting on Lambda (worker/secrets.ts). */
export const SECRET_ARN_SUFFIX = "_SECRET_ARN";

/** Variables of the project's own tests, benchmarks and scripts: no process's settings. */
const TOOLING_VARIABLE = /^KEEL_(TEST_|FUZZ_|KEEP_|RECORD_HISTORIES$)/;

/**
 * Variables settings point at (a variable KEEL_SANDBOX_PASS_ENV lists, the key
 * variable of a KEEL_MODEL_URLS entry): read by name, so they may start with `KEEL_` too.
 */
function variablesNamedBy(env: NodeJS.ProcessEnv): string[] {
  const items = (text: string | undefined) =>
    (text ?? "")
      .split(",")
      .map((item) => item.trim())
      .filter(Boolean);
  return [
    ...items(env.KEEL_SANDBOX_PASS_ENV),
    ...items(env.KEEL_MODEL_URLS).flatMap((entry) => entry.split(/\s+/).slice(1)),
  ];
}

/**
 * The `KEEL_*` variables of `env` that no Keel process reads, each with the setting it most
 * likely meant: a typo must not silently leave a default in place. Never throws.
 */
export function unknownSettings(env: NodeJS.ProcessEnv): UnknownSetting[] {
  const known = new Set<string>([...SETTING_NAMES, ...variablesNamedBy(env)]);
  return Object.keys(env)
    .filter((name) => name.startsWith("KEEL_") && env[name] !== undefined)
    .filter((name) => !known.has(name) && !TOOLING_VARIABLE.test(name))
    .filter(
      (name) => !(name.endsWith(SECRET_ARN_SUFFIX) && known.has(name.slice(0, -SECRET_ARN_SUFFIX.length))),
    )
    .sort()
    .map((name) => {
      const retired = RETIRED_SETTINGS[name];
      if (retired) return { name, retired };
      const suggestion = nearestSetting(name, SETTING_NAMES);
      return suggestion ? { name, suggestion } : { name };
    });
}

/** A `KEEL_*` variable no process reads: retired (with what replaced it), or perhaps a typo. */
export interface UnknownSetting {
  name: string;
  /** The setting it most likely meant. */
  suggestion?: string;
  /** What replaced it, when it is a retired setting. */
  retired?: string;
}

/** One line per unknown variable, for a process to log or print at start. */
export function describeUnknownSettings(unknown: readonly UnknownSetting[]): string[] {
  return unknown.map(({ name, suggestion, retired }) =>
    retired
      ? `${name} is no longer read: ${retired}`
      : `${name} is not a Keel setting and is ignored${suggestion ? ` (did you mean ${suggestion}?)` : ""}; docs/configuration.md lists them all`,
  );
}

/** The setting within a few edits of `name`, if one is clearly nearest. */
function nearestSetting(name: string, names: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of names) {
    const distance = editDistance(name, candidate);
    if (!best || distance < best.distance) best = { name: candidate, distance };
  }
  return best && best.distance <= Math.max(2, Math.floor(name.length / 6)) ? best.name : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
