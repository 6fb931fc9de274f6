/**
 * The environment a bash command sees: the worker's own, minus anything that looks like a
 * secret (API keys, tokens, cloud and Temporal credentials), plus settings that keep commands
 * non-interactive.
 */

/** Names containing any of these words, or starting with any of these prefixes, are dropped. */
const SECRET_NAME = /KEY|SECRET|TOKEN|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|CERT|SIGNATURE/i;
const SECRET_PREFIX =
  /^(AWS_|TEMPORAL_|KEEL_|AZURE_|ARM_|GCP_|GOOGLE_|GCLOUD_|OPENAI|ANTHROPIC|GITHUB_|GH_|GITLAB_|NPM_CONFIG_|SLACK_|DATABASE_URL|DB_|PG|MYSQL|REDIS|MONGO|SENTRY_|DOCKER_|S3_)/i;
/** Always passed through, even if a pattern above would match. */
const ALWAYS_KEPT = new Set([
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

const NON_INTERACTIVE = { PAGER: "cat", GIT_PAGER: "cat", GIT_TERMINAL_PROMPT: "0" } as const;

export function isSecretName(name: string): boolean {
  if (ALWAYS_KEPT.has(name) || name.startsWith("LC_")) return false;
  return SECRET_NAME.test(name) || SECRET_PREFIX.test(name);
}

/** A copy of `source` without secret-looking variables, with non-interactive defaults. */
export function scrubEnvironment(source: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const kept: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(source)) {
    if (value !== undefined && !isSecretName(name)) kept[name] = value;
  }
  return { ...kept, ...NON_INTERACTIVE };
}
