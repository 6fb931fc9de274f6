/**
 * The environment a bash command sees, built from an allowlist: a fixed PATH, a private home,
 * locale and terminal settings, non-interactive defaults, and the worker variables the operator
 * named in KEEL_SANDBOX_PASS_ENV. Nothing else of the worker's environment (provider keys, AWS or
 * Temporal credentials, KEEL_* settings) reaches a command.
 */

/** Names that look like secrets: refused in KEEL_SANDBOX_PASS_ENV (isSecretName). */
const SECRET_NAME = /KEY|SECRET|TOKEN|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|CERT|SIGNATURE/i;
const SECRET_PREFIX =
  /^(AWS_|TEMPORAL_|KEEL_|AZURE_|ARM_|GCP_|GOOGLE_|GCLOUD_|OPENAI|ANTHROPIC|GITHUB_|GH_|GITLAB_|NPM_CONFIG_|SLACK_|DATABASE_URL|DB_|PG|MYSQL|REDIS|MONGO|SENTRY_|DOCKER_|S3_)/i;
/** Never secrets, even if a pattern above would match. */
const NEVER_SECRET = new Set([
  "PATH",
  "HOME",
  "LANG",
  "LANGUAGE",
  "TERM",
  "USER",
  "LOGNAME",
  "SHELL",
  "TMPDIR",
  "TZ",
]);

/** Copied from the worker when set: how text is encoded and shown, and the time zone. */
const LOCALE_NAMES = ["LANG", "LANGUAGE", "TZ"];

/** PATH inside the sandbox: the system directories (the worker's own PATH may name folders not mounted there). */
const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const NON_INTERACTIVE = { PAGER: "cat", GIT_PAGER: "cat", GIT_TERMINAL_PROMPT: "0", TERM: "dumb" } as const;

export function isSecretName(name: string): boolean {
  if (NEVER_SECRET.has(name) || name.startsWith("LC_")) return false;
  return SECRET_NAME.test(name) || SECRET_PREFIX.test(name);
}

/** Throws when a name configured for pass-through looks like a secret or is not a variable name. */
export function assertPassableNames(names: readonly string[]): void {
  for (const name of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new Error(`KEEL_SANDBOX_PASS_ENV: ${JSON.stringify(name)} is not an environment variable name`);
    }
    if (isSecretName(name)) {
      throw new Error(
        `KEEL_SANDBOX_PASS_ENV: ${name} looks like a secret; tool commands never receive the worker's secrets`,
      );
    }
  }
}

/**
 * What of the host process's environment commands may be given (SandboxConfig.hostEnv): PATH,
 * HOME, TMPDIR and USER (unsandboxed commands), locales, and the `passEnv` variables. Built once
 * at the process's entry point, so nothing else of it is kept beside the sandbox's settings.
 */
export function hostEnvironment(env: NodeJS.ProcessEnv, passEnv: readonly string[]): NodeJS.ProcessEnv {
  const kept: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    const wanted =
      ["PATH", "HOME", "TMPDIR", "USER"].includes(name) ||
      LOCALE_NAMES.includes(name) ||
      name.startsWith("LC_") ||
      passEnv.includes(name);
    if (wanted && value !== undefined) kept[name] = value;
  }
  return kept;
}

export interface EnvironmentOptions {
  /** Worker variables passed through (already checked by assertPassableNames). */
  passEnv: readonly string[];
  /** Inside the sandbox: the system PATH and a private home under /tmp; otherwise the worker's PATH and HOME. */
  sandboxed: boolean;
  /** The host process's environment (SandboxConfig.hostEnv). */
  source: NodeJS.ProcessEnv;
}

/** The complete environment of a command: allowlisted names only. */
export function commandEnvironment({ passEnv, sandboxed, source }: EnvironmentOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = sandboxed
    ? { PATH: SYSTEM_PATH, HOME: "/tmp", TMPDIR: "/tmp", USER: "sandbox", LOGNAME: "sandbox" }
    : { PATH: source.PATH, HOME: source.HOME, TMPDIR: source.TMPDIR, USER: source.USER };
  for (const name of Object.keys(source)) {
    if (LOCALE_NAMES.includes(name) || name.startsWith("LC_") || passEnv.includes(name))
      env[name] = source[name];
  }
  for (const name of Object.keys(env)) if (env[name] === undefined) delete env[name];
  return { ...env, ...NON_INTERACTIVE };
}
