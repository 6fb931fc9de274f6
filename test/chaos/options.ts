/**
 * Options of the chaos suite (`npm run chaos -- [flags]`): two presets (`--short` for CI, the
 * default long form) and flags / CHAOS_* environment variables that override single values.
 * Flags win over the environment, which wins over the preset.
 */

export type ChaosForm = "short" | "long";

export interface ChaosOptions {
  form: ChaosForm;
  /** Seed of every random choice: the plan (faults, aborts, scenarios) is a function of it. */
  seed: number;
  /** Sessions driven through the API (one run each, plus a follow-up run when aborted). */
  runs: number;
  /** Runs live at once. */
  concurrency: number;
  /** Worker SIGKILLs. */
  kills: number;
  /** Mean time between two kills (each gap is drawn from 0.5× to 1.5× of it). */
  killEveryMs: number;
  /** Sessions aborted at a random moment of their run (each then gets a follow-up). */
  aborts: number;
  /** Restarts of the Temporal dev server on its own database (same data folder, same port). */
  temporalRestarts: number;
  /** S3 server outages (stopped, then started again on the same data folder and ports). */
  s3Outages: number;
  s3OutageMs: number;
  /** Sessions whose tools run on a `runner` environment served by two `keel runner` processes (the rest: in the worker). */
  runnerSessions: number;
  /** Runner SIGKILLs (each aimed at a runner holding a call, then replaced): alone, with a worker SIGKILL, with an S3 outage. */
  runnerKills: number;
  /**
   * SIGKILLs of the HTTP API process (each at a moment a runner holds a call, when one does within
   * 10 s), then started again on its port.
   */
  apiRestarts: number;
  /**
   * Sessions (never aborted or steered) run with a cost and/or token budget and a turn of two or
   * three parallel `task` calls; the tree's spend is checked against the budget.
   */
  budgetedSessions: number;
  /** A run not over this long after its message was delivered and after the last fault is stuck. */
  runBoundMs: number;
  /** No new run starts and no fault is injected after this; in-flight runs get `runBoundMs`. */
  durationCapMs: number;
}

export const CHAOS_PRESETS: Record<ChaosForm, ChaosOptions> = {
  short: {
    form: "short",
    seed: 1,
    runs: 8,
    concurrency: 4,
    kills: 5,
    killEveryMs: 10_000,
    aborts: 2,
    temporalRestarts: 1,
    s3Outages: 1,
    s3OutageMs: 7_000,
    runnerSessions: 4,
    runnerKills: 3,
    apiRestarts: 1,
    budgetedSessions: 2,
    runBoundMs: 180_000,
    durationCapMs: 5 * 60_000,
  },
  long: {
    form: "long",
    seed: 1,
    runs: 120,
    concurrency: 6,
    kills: 100,
    killEveryMs: 10_000,
    aborts: 20,
    temporalRestarts: 1,
    s3Outages: 1,
    s3OutageMs: 7_000,
    runnerSessions: 40,
    runnerKills: 30,
    apiRestarts: 3,
    budgetedSessions: 10,
    runBoundMs: 180_000,
    durationCapMs: 40 * 60_000,
  },
};

type NumericOption = Exclude<keyof ChaosOptions, "form">;

/** Flag name (and CHAOS_ variable), the option it sets, and whether zero is allowed. */
const NUMERIC_FLAGS: ReadonlyArray<{ flag: string; key: NumericOption; min: number; unit: number }> = [
  { flag: "seed", key: "seed", min: 0, unit: 1 },
  { flag: "runs", key: "runs", min: 1, unit: 1 },
  { flag: "concurrency", key: "concurrency", min: 1, unit: 1 },
  { flag: "kills", key: "kills", min: 0, unit: 1 },
  { flag: "kill-every-seconds", key: "killEveryMs", min: 1, unit: 1000 },
  { flag: "aborts", key: "aborts", min: 0, unit: 1 },
  { flag: "temporal-restarts", key: "temporalRestarts", min: 0, unit: 1 },
  { flag: "s3-outages", key: "s3Outages", min: 0, unit: 1 },
  { flag: "s3-outage-seconds", key: "s3OutageMs", min: 1, unit: 1000 },
  { flag: "runner-sessions", key: "runnerSessions", min: 0, unit: 1 },
  { flag: "runner-kills", key: "runnerKills", min: 0, unit: 1 },
  { flag: "api-restarts", key: "apiRestarts", min: 0, unit: 1 },
  { flag: "budgeted-sessions", key: "budgetedSessions", min: 0, unit: 1 },
  { flag: "run-bound-seconds", key: "runBoundMs", min: 10, unit: 1000 },
  { flag: "max-minutes", key: "durationCapMs", min: 1, unit: 60_000 },
];

export const CHAOS_USAGE = `Usage: npm run chaos -- [--short] [--<option> N ...]
  --short                 the CI form (${describe(CHAOS_PRESETS.short)})
                          default: the long form (${describe(CHAOS_PRESETS.long)})
${NUMERIC_FLAGS.map(({ flag }) => `  --${flag} N`).join("\n")}
Each option may also come from the environment: CHAOS_SEED, CHAOS_RUNS, CHAOS_KILLS, ... (flags win).`;

function describe(options: ChaosOptions): string {
  return `${options.runs} runs, ${options.kills} kills, ${options.aborts} aborts, ${options.temporalRestarts} Temporal restarts, ${options.s3Outages} S3 outages, ${options.runnerSessions} sessions on runners, ${options.runnerKills} runner kills, ${options.apiRestarts} API restarts, ${options.budgetedSessions} budgeted sessions`;
}

export class ChaosUsageError extends Error {
  override name = "ChaosUsageError";
}

function envName(flag: string): string {
  return `CHAOS_${flag.toUpperCase().replaceAll("-", "_")}`;
}

function parseCount(raw: string, source: string, min: number): number {
  const value = Number(raw);
  if (raw.trim() === "" || !Number.isSafeInteger(value) || value < min) {
    throw new ChaosUsageError(`${source} must be an integer >= ${min}, got "${raw}"`);
  }
  return value;
}

/**
 * Options from command-line arguments (after `--`) and the environment. Throws ChaosUsageError
 * naming the bad flag or variable; `--help` throws one carrying the usage text.
 */
export function parseChaosOptions(argv: readonly string[], env: NodeJS.ProcessEnv = {}): ChaosOptions {
  const flags = new Map<string, string>();
  let form: ChaosForm = env.CHAOS_SHORT === "1" ? "short" : "long";
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] as string;
    if (arg === "--help" || arg === "-h") throw new ChaosUsageError(CHAOS_USAGE);
    if (arg === "--short") {
      form = "short";
      continue;
    }
    const match = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(arg);
    const known = match && NUMERIC_FLAGS.some(({ flag }) => flag === match[1]);
    if (!match || !known) throw new ChaosUsageError(`unknown argument "${arg}"\n${CHAOS_USAGE}`);
    const value = match[2] ?? argv[++index];
    if (value === undefined) throw new ChaosUsageError(`--${match[1]} needs a value`);
    flags.set(match[1] as string, value);
  }
  const options: ChaosOptions = { ...CHAOS_PRESETS[form] };
  for (const { flag, key, min, unit } of NUMERIC_FLAGS) {
    const fromFlag = flags.get(flag);
    const fromEnv = env[envName(flag)];
    if (fromFlag !== undefined) options[key] = parseCount(fromFlag, `--${flag}`, min) * unit;
    else if (fromEnv !== undefined && fromEnv !== "")
      options[key] = parseCount(fromEnv, envName(flag), min) * unit;
  }
  if (options.aborts > options.runs) {
    throw new ChaosUsageError(`--aborts (${options.aborts}) cannot exceed --runs (${options.runs})`);
  }
  if (options.runnerSessions > options.runs) {
    throw new ChaosUsageError(
      `--runner-sessions (${options.runnerSessions}) cannot exceed --runs (${options.runs})`,
    );
  }
  if (options.budgetedSessions > options.runs - options.aborts) {
    throw new ChaosUsageError(
      `--budgeted-sessions (${options.budgetedSessions}) cannot exceed the sessions not aborted (${options.runs - options.aborts})`,
    );
  }
  if (options.runnerKills > 0 && options.runnerSessions === 0) {
    throw new ChaosUsageError(
      "--runner-kills needs --runner-sessions > 0 (no runner is started without them)",
    );
  }
  return options;
}
