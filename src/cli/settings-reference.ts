/**
 * Every process kind's settings schema, and what is generated from them: docs/configuration.md
 * (the reference page) and src/core/setting-names.ts (the names a process checks its environment
 * against at start). `npm run settings:doc` writes both; a unit test fails when either is stale.
 */
import type { z } from "zod";
import { API_ENV } from "../api/config";
import { CLIENT_ENV } from "../api-client/settings";
import { RETIRED_SETTINGS, type SettingsShape } from "../core/env-settings";
import { RUNNER_ENV } from "../runner/settings";
import { WORKER_ENV } from "../worker/env";
import { LAMBDA_WORKER_ENV } from "../worker/lambda";
import { DEV_ENV } from "./devstack/settings";
import { CLI_ENV } from "./settings";

/** The process kinds, in the order the reference page names them. */
const PROCESS_SETTINGS: readonly { process: string; shape: SettingsShape }[] = [
  { process: "API", shape: API_ENV },
  { process: "worker", shape: WORKER_ENV },
  { process: "Lambda worker", shape: LAMBDA_WORKER_ENV },
  { process: "runner", shape: RUNNER_ENV },
  { process: "CLI", shape: { ...CLIENT_ENV, ...CLI_ENV } },
  { process: "keel dev", shape: DEV_ENV },
];

interface Setting {
  name: string;
  schema: z.ZodType;
  processes: string[];
}

/** Each variable once, with every process that reads it, by name. */
function settings(): Setting[] {
  const byName = new Map<string, Setting>();
  for (const { process, shape } of PROCESS_SETTINGS) {
    for (const [name, schema] of Object.entries(shape)) {
      const setting = byName.get(name) ?? { name, schema, processes: [] };
      setting.processes.push(process);
      byName.set(name, setting);
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** What a value looks like, from the schema's input side. */
function typeOf(schema: z.ZodType): string {
  const json = schema.toJSONSchema({ io: "input", unrepresentable: "any" }) as {
    type?: string;
    enum?: string[];
    format?: string;
  };
  if (json.enum) return json.enum.map((value) => `\`${value}\``).join(" · ");
  if (json.type === "integer") return "integer";
  if (json.type === "number") return "number";
  if (json.format === "uri") return "URL";
  return "text";
}

/** The value an unset variable stands for, or "–". */
function defaultOf(schema: z.ZodType): string {
  const parsed = schema.safeParse(undefined);
  if (!parsed.success || parsed.data === undefined || parsed.data === "") return "–";
  return `\`${String(parsed.data)}\``;
}

/** Text safe in one Markdown table cell. */
const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

/** docs/configuration.md, whole. */
export function renderConfigurationReference(): string {
  const rows = settings().map(
    ({ name, schema, processes }) =>
      `| \`${name}\` | ${typeOf(schema)} | ${defaultOf(schema)} | ${processes.join(", ")} | ${cell(schema.description ?? "")} |`,
  );
  return `${[
    "# Configuration",
    "",
    "<!-- Generated from the settings schemas by `npm run settings:doc`; a unit test fails when it is stale. Do not edit. -->",
    "",
    "Every Keel process reads its settings from environment variables, once, at its start: the API",
    "(`src/api/server.ts`, and the same on Lambda), the worker (`src/worker/main.ts`; on Lambda",
    "`src/worker/lambda.ts`, which reads the worker's and two more), a runner (`keel runner`), the `keel` command and",
    "`keel dev`. Each checks its own variables and stops with one error naming every invalid one",
    "(never its value). A variable starting with `KEEL_` that no process reads is reported at start",
    "(the API and the worker log a warning, the `keel` command prints one), with the setting it most",
    "likely meant: a typo does not silently leave a default in place. On Lambda, `<NAME>_SECRET_ARN`",
    "sets `<NAME>` from AWS Secrets Manager ([deploy.md](deploy.md)).",
    "",
    "`keel dev` starts its own API and worker and sets their servers, keys and bundle itself; every",
    "other worker setting set where it starts is passed on to its worker",
    "([local-stack.md](local-stack.md#what-keel-dev-passes-to-its-worker)).",
    "",
    "Values marked (secret) are never logged, echoed in an error, or passed to tool commands.",
    "Variables of the project's own tests, benchmarks and scripts (`KEEL_TEST_*`, `KEEL_FUZZ_*`,",
    "`KEEL_KEEP_*`, `KEEL_RECORD_HISTORIES`) are not settings of any process and are not listed.",
    "",
    "| Variable | Type | Default | Read by | What it does |",
    "| --- | --- | --- | --- | --- |",
    ...rows,
    "",
    "## Retired",
    "",
    "No process reads these any more; each refuses to start while one is set, and `keel` says what",
    "replaced it.",
    "",
    ...Object.entries(RETIRED_SETTINGS).map(([name, replacement]) => `- \`${name}\`: ${cell(replacement)}.`),
  ].join("\n")}\n`;
}

/** src/core/setting-names.ts, whole. */
export function renderSettingNames(): string {
  const names = settings().map(({ name }) => `  "${name}",`);
  return `${[
    "// Generated from the settings schemas by `npm run settings:doc` (src/cli/settings-reference.ts); a",
    "// unit test fails when it is stale. Do not edit.",
    "",
    "/** Every variable a Keel process reads (docs/configuration.md). */",
    "export const SETTING_NAMES: readonly string[] = [",
    ...names,
    "];",
  ].join("\n")}\n`;
}
