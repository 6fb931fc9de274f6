/**
 * One configuration per process (docs/configuration.md): only the entry points read
 * `process.env`; every variable the code names is declared in a settings schema; the generated
 * reference page and name list are current; a variable no process reads is reported with the
 * setting it most likely meant.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { renderConfigurationReference, renderSettingNames } from "../../../src/cli/settings-reference";
import {
  describeUnknownSettings,
  parseSettings,
  RETIRED_SETTINGS,
  unknownSettings,
} from "../../../src/core/env-settings";
import { SETTING_NAMES } from "../../../src/core/setting-names";

const ROOT = resolve(__dirname, "../../..");
const SRC = join(ROOT, "src");

/** The processes' entry points: each reads its environment once and passes settings down. */
const ENTRY_POINTS = ["api/server.ts", "api/lambda.ts", "worker/main.ts", "worker/lambda.ts", "cli/main.ts"];

/** Reads below the entry points that are no setting, each with why it stays. */
const NOT_SETTINGS: Record<string, string> = {
  "store/s3-config.ts": "sets the AWS SDK's own notice switch, which the SDK reads from the process",
  "tools/sandbox.ts": "looks executables (bwrap, socat) up on the process's PATH",
  "tools/git-source.ts": "gives git clone the process's PATH",
  "cli/devstack/":
    "the local servers' launchers (keel dev, tests, benchmarks) hand PATH and HOME to what they start",
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Files of src/ (relative to it) whose code mentions `process.env`, comments left out. */
function filesReadingProcessEnv(): string[] {
  return sourceFiles(SRC)
    .filter((file) => {
      const code = readFileSync(file, "utf8")
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
      return /process\s*\.\s*env\b|process\s*\[\s*["'`]env/.test(code);
    })
    .map((file) => relative(SRC, file));
}

test("nothing below an entry point reads process.env", () => {
  const readers = filesReadingProcessEnv();
  // The check sees reads: the entry points do read it.
  expect(readers).toEqual(expect.arrayContaining(ENTRY_POINTS));
  const allowed = (file: string) =>
    ENTRY_POINTS.includes(file) || Object.keys(NOT_SETTINGS).some((prefix) => file.startsWith(prefix));
  expect(readers.filter((file) => !allowed(file))).toEqual([]);
});

test("every KEEL_ variable the code names is declared in a settings schema", () => {
  const named = new Set<string>();
  for (const file of sourceFiles(SRC)) {
    // Whole names only: "KEEL_S3_*" and prefixes ending in "_" name a family, not a variable.
    for (const match of readFileSync(file, "utf8").matchAll(/\bKEEL_[A-Z0-9_]*[A-Z0-9]\b(?![_*])/g))
      named.add(match[0]);
  }
  // A constant's own name, not a variable.
  named.delete("KEEL_GITIGNORE");
  const tooling = /^KEEL_(TEST_|FUZZ_|KEEP_|RECORD_HISTORIES$)/;
  const declared = (name: string) =>
    SETTING_NAMES.includes(name) || name in RETIRED_SETTINGS || tooling.test(name);
  expect([...named].filter((name) => !declared(name)).sort()).toEqual([]);
});

test("docs/configuration.md and src/core/setting-names.ts are generated from the schemas (npm run settings:doc)", () => {
  expect(readFileSync(join(ROOT, "docs/configuration.md"), "utf8")).toBe(renderConfigurationReference());
  expect(readFileSync(join(SRC, "core/setting-names.ts"), "utf8")).toBe(renderSettingNames());
  // Every row says what the variable does.
  const rows = renderConfigurationReference()
    .split("\n")
    .filter((line) => line.startsWith("| `"));
  expect(rows.length).toBe(SETTING_NAMES.length);
  expect(rows.filter((row) => row.endsWith("|  |"))).toEqual([]);
});

test("a KEEL_ variable no process reads is reported with the setting it most likely meant", () => {
  const unknown = unknownSettings({
    KEEL_SANBOX: "off",
    KEEL_TEMPORAL_ADRESS: "temporal:7233",
    KEEL_SOMETHING_ELSE_ENTIRELY: "x",
    // Known settings, what settings name, the project's own tooling, Lambda's secret references.
    KEEL_SANDBOX: "on",
    KEEL_SANDBOX_PASS_ENV: "KEEL_PASSED_ON",
    KEEL_PASSED_ON: "1",
    KEEL_MODEL_URLS: "https://gw.example KEEL_GW_KEY",
    KEEL_GW_KEY: "k",
    KEEL_TEST_SUMMARY_FILE: "/tmp/x",
    KEEL_API_KEYS_SECRET_ARN: "arn:aws:secretsmanager:…",
    PATH: "/usr/bin",
  });
  expect(unknown).toEqual([
    { name: "KEEL_SANBOX", suggestion: "KEEL_SANDBOX" },
    { name: "KEEL_SOMETHING_ELSE_ENTIRELY" },
    { name: "KEEL_TEMPORAL_ADRESS", suggestion: "KEEL_TEMPORAL_ADDRESS" },
  ]);
  const lines = describeUnknownSettings(unknown);
  expect(lines[0]).toBe(
    "KEEL_SANBOX is not a Keel setting and is ignored (did you mean KEEL_SANDBOX?); docs/configuration.md lists them all",
  );
  // The value is never in the line (it may be a secret).
  expect(lines.join("\n")).not.toContain("temporal:7233");
});

test("a retired setting stops every process that parses its settings, and keel says what replaced it", () => {
  expect(() => parseSettings({}, { KEEL_SLACK_TENANT: "acme" }, "worker")).toThrow(
    "Invalid worker configuration: KEEL_SLACK_TENANT is replaced by KEEL_SLACK_TEAMS",
  );
  expect(describeUnknownSettings(unknownSettings({ KEEL_SLACK_TENANT: "acme" }))).toEqual([
    `KEEL_SLACK_TENANT is no longer read: ${RETIRED_SETTINGS.KEEL_SLACK_TENANT}`,
  ]);
  // The operator-wide MCP secrets: replaced by each tenant's own.
  expect(() => parseSettings({}, { KEEL_MCP_SECRETS: "GITHUB_TOKEN" }, "runner")).toThrow(
    "Invalid runner configuration: KEEL_MCP_SECRETS is replaced by tenant secrets: each tenant stores its own (keel secret set NAME --host HOST)",
  );
});

test("the keel command warns of a mistyped setting, and still runs", () => {
  const result = spawnSync(process.execPath, ["--import", "tsx", join(SRC, "cli/main.ts"), "--help"], {
    encoding: "utf8",
    env: { PATH: process.env.PATH, HOME: process.env.HOME, KEEL_API_ULR: "http://127.0.0.1:1" },
  });
  expect(result.stderr).toContain(
    "keel: warning: KEEL_API_ULR is not a Keel setting and is ignored (did you mean KEEL_API_URL?)",
  );
  expect(result.stdout).toContain("Usage");
  expect(result.status).toBe(0);
});
