/**
 * Which of the caller's variables `keel dev` passes on to its worker. The worker starts with an
 * environment the stack builds (its servers, the local model server, the workflow bundle), so a
 * worker setting the docs tell a user to set (KEEL_MCP_MOUNTS, KEEL_SANDBOX_*, …) would otherwise
 * never reach it; and the variables those settings name (a variable passed to tool commands, the
 * key of a listed model URL) must be in the worker's environment to be read.
 */
import { TEMPORAL_ENV } from "../../core/temporal-settings";
import { MODEL_URLS_SETTING, parseModelUrls } from "../../providers/model-urls";
import { PROVIDER_ENV } from "../../providers/settings";
import { S3_ENV } from "../../store/s3-config";
import { VAULT_ENV } from "../../vault/settings";
import { WORKER_SETTING_NAMES } from "../../worker/env";

/**
 * Settings the stack sets itself: where Temporal and S3 are (its own servers'), the task queue,
 * the providers (the local model server, or the caller's keys), the workflow bundle it writes (a
 * traced one replaces it, so another traced bundle must not), where workspaces go, telemetry
 * (Jaeger's, or the caller's endpoint), and the model URLs and git hosts it merges the local
 * model server into.
 */
const SET_BY_THE_STACK = new Set([
  ...Object.keys(TEMPORAL_ENV),
  ...Object.keys(S3_ENV),
  ...Object.keys(PROVIDER_ENV),
  "KEEL_OTEL_ENDPOINT",
  "KEEL_OTEL_CAPTURE_CONTENT",
  "KEEL_WORKFLOW_BUNDLE",
  "KEEL_WORKFLOW_BUNDLE_TRACED",
  "KEEL_WORKSPACE_ROOT",
  MODEL_URLS_SETTING,
  "KEEL_GIT_HOSTS",
  // The stack's vault key (devstack/vault-key.ts), or the caller's, given to the worker and the API alike.
  ...Object.keys(VAULT_ENV),
]);

function names(text: string | undefined): string[] {
  return (text ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
}

/**
 * The caller's worker settings that are set, and the variables they name, to add to the worker's
 * environment; `names` lists them, sorted, for the start message (values may be secrets).
 */
export function workerPassThrough(env: NodeJS.ProcessEnv): { env: Record<string, string>; names: string[] } {
  const settings = WORKER_SETTING_NAMES.filter((name) => !SET_BY_THE_STACK.has(name));
  // A malformed KEEL_MODEL_URLS names no variable here; the worker reports it at start.
  let modelKeys: string[];
  try {
    modelKeys = parseModelUrls(env[MODEL_URLS_SETTING]).flatMap((entry) =>
      entry.keyVariable ? [entry.keyVariable] : [],
    );
  } catch {
    modelKeys = [];
  }
  const named = [...names(env.KEEL_SANDBOX_PASS_ENV), ...modelKeys];
  const passed: Record<string, string> = {};
  for (const name of [...settings, ...named]) {
    const value = env[name];
    if (value !== undefined && !(name in passed)) passed[name] = value;
  }
  // Sorted: the start message reads the same whatever order the schema declares them in.
  return { env: passed, names: Object.keys(passed).sort() };
}
