/** Worker configuration from the environment, validated once at start. */

import { join } from "node:path";
import { z } from "zod";
import { DEFAULT_LIVE_EVENT_OPTIONS, type LiveEventOptions } from "../activities/live-events";
import { booleanFlag, describeIssues } from "../core/env-settings";
import { isValidId } from "../core/ids";
import { TEMPORAL_ENV, type TemporalSettings, temporalSettings } from "../core/temporal-settings";
import { DEFAULT_LAUNCHED_IDLE_SECONDS, type LauncherConfig } from "../environments/launchers/types";
import { MODEL_URLS_SETTING, type ModelUrlEntry, parseModelUrls } from "../providers/model-urls";
import type { ProviderConfig } from "../providers/registry";
import { type S3Settings, s3SettingsFromEnv } from "../store/s3-config";
import { DEFAULT_SNAPSHOT_MAX_BYTES } from "../store/workspace-snapshots";
import { DEFAULT_TENANT_BUDGET_RECHECK_MS } from "../tenants/budget-check";
import { assertPassableNames } from "../tools/environment";
import { type GitHosts, parseGitHosts } from "../tools/git-source";
import { parseFullNetworkAccess } from "../tools/network-access";
import { DEFAULT_PROCESS_LIMITS, type SandboxConfig } from "../tools/sandbox";

const MIB = 1024 ** 2;

/** A JSON object of header names to values; the values may be secrets and are never echoed. */
const headersJson = z.string().transform((text, ctx) => {
  try {
    const parsed: unknown = JSON.parse(text);
    const headers = z.record(z.string(), z.string()).safeParse(parsed);
    if (headers.success) return headers.data;
  } catch {
    // reported below, without the value
  }
  ctx.addIssue({ code: "custom", message: 'must be a JSON object of strings, e.g. {"X-Title":"keel"}' });
  return z.NEVER;
});
const milliseconds = z.coerce.number().int().positive();
/** A comma-separated list of AWS resource ids with this prefix (`subnet-…`, `sg-…`), at least one. */
const idList = (prefix: string) =>
  z
    .string()
    .transform((text) =>
      text
        .split(",")
        .map((id) => id.trim())
        .filter(Boolean),
    )
    .refine((ids) => ids.length > 0 && ids.every((id) => new RegExp(`^${prefix}-[0-9a-f]{8,17}$`).test(id)), {
      message: `must be comma-separated ${prefix}-… ids`,
    });

/** Default of KEEL_WORKSPACE_IDLE_EVICT_SECONDS: half an hour unused, then only S3 holds it. */
export const DEFAULT_WORKSPACE_IDLE_EVICT_SECONDS = 1800;

const WorkerEnvSchema = z.object({
  ...TEMPORAL_ENV,
  KEEL_WORKSPACE_ROOT: z.string().optional(),
  /**
   * A prebuilt workflow bundle (`npx tsx infra/bundling/bundle-workflows.ts OUT.js`, as the
   * Dockerfile does); bundled at start when unset.
   */
  KEEL_WORKFLOW_BUNDLE: z.string().optional(),
  /**
   * The same bundle with the tracing interceptors (`bundle-workflows.ts --traced`), loaded instead
   * when KEEL_OTEL_ENDPOINT turns telemetry on (the image carries both).
   */
  KEEL_WORKFLOW_BUNDLE_TRACED: z.string().optional(),
  KEEL_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().positive().default(200),
  /** On SIGTERM, in-flight activities get this long to finish before they are cancelled. */
  KEEL_SHUTDOWN_GRACE_SECONDS: z.coerce.number().nonnegative().default(60),
  /**
   * Provider connection options (keys and base URLs come from OPENAI_API_KEY / OPENAI_BASE_URL /
   * ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, read by the provider registry).
   */
  KEEL_OPENAI_STREAM: booleanFlag.optional(),
  KEEL_OPENAI_TIMEOUT_MS: milliseconds.optional(),
  KEEL_OPENAI_HEADERS: headersJson.optional(),
  KEEL_ANTHROPIC_STREAM: booleanFlag.optional(),
  KEEL_ANTHROPIC_TIMEOUT_MS: milliseconds.optional(),
  KEEL_ANTHROPIC_HEADERS: headersJson.optional(),
  KEEL_ANTHROPIC_PROMPT_CACHING: booleanFlag.optional(),
  /**
   * "off" runs tool processes unsandboxed (hosts without user namespaces); logged at every start.
   * Refused unless KEEL_SINGLE_TENANT names the one tenant the worker serves.
   */
  KEEL_SANDBOX: z.enum(["on", "off"]).default("on"),
  /**
   * "off": this worker runs no tool call itself (every run's tools run in a runner or launched
   * environment); a call that reaches it anyway gets an error result and does not run.
   */
  KEEL_WORKER_TOOLS: z.enum(["on", "off"]).default("on"),
  /**
   * The one tenant this worker serves: activities of any other tenant are refused. Required with
   * KEEL_SANDBOX=off, where a tool command can read the worker's secrets and every workspace.
   */
  KEEL_SINGLE_TENANT: z.string().refine(isValidId, "must be a valid tenant id").optional(),
  /** "off" stops publishing live events (deltas, tool output so far) to run streams. */
  KEEL_LIVE_EVENTS: z.enum(["on", "off"]).default("on"),
  /** Longest a live delta waits to be sent with others (each batch is one signal in the run's history). */
  KEEL_LIVE_EVENTS_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(10)
    .max(10_000)
    .default(DEFAULT_LIVE_EVENT_OPTIONS.intervalMs),
  /** Comma-separated worker variables passed to tool commands (secret-looking names are refused). */
  KEEL_SANDBOX_PASS_ENV: z.string().default(""),
  /** Who may run tools with network "full": off (default), on, or comma-separated tenant ids. */
  KEEL_SANDBOX_NETWORK_FULL: z.string().optional(),
  KEEL_SANDBOX_MEMORY_MB: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_PROCESS_LIMITS.memoryBytes / MIB),
  KEEL_SANDBOX_MAX_PROCESSES: z.coerce.number().int().positive().default(DEFAULT_PROCESS_LIMITS.processes),
  /** CPU seconds of one tool call: RLIMIT_CPU per process, and all its processes together where cgroups allow. */
  KEEL_SANDBOX_CPU_SECONDS: z.coerce.number().int().positive().default(DEFAULT_PROCESS_LIMITS.cpuSeconds),
  KEEL_SANDBOX_MAX_FILE_MB: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_PROCESS_LIMITS.fileSizeBytes / MIB),
  KEEL_SANDBOX_TMP_MB: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_PROCESS_LIMITS.tmpBytes / MIB),
  /**
   * Seconds a held workspace may stay unused before it is evicted from the local disk (only when
   * identical to its last snapshot and no call of this worker is using it); 0 = never. The next
   * claim (with the run's leaf) or tool call restores it from the snapshot.
   */
  KEEL_WORKSPACE_IDLE_EVICT_SECONDS: z.coerce
    .number()
    .nonnegative()
    .default(DEFAULT_WORKSPACE_IDLE_EVICT_SECONDS),
  /** Largest workspace (bytes of files) a snapshot records; a larger one fails the snapshot. */
  KEEL_SNAPSHOT_MAX_BYTES: z.coerce.number().int().positive().default(DEFAULT_SNAPSHOT_MAX_BYTES),
  /** Extra base URLs one-line models may name, each optionally with its key's variable (model-urls.ts). */
  KEEL_MODEL_URLS: z.string().optional(),
  /** Hosts git workspace sources may name (git-source.ts); unset: DEFAULT_GIT_HOSTS. */
  KEEL_GIT_HOSTS: z.string().optional(),
  /** How often a run paused at its tenant's budget asks again whether it may go on (tenants/budget-check.ts). */
  KEEL_TENANT_BUDGET_RECHECK_SECONDS: z.coerce
    .number()
    .positive()
    .default(DEFAULT_TENANT_BUDGET_RECHECK_MS / 1000),
  /**
   * Who starts the runners of `launched` environments: `local` (a process on this worker's machine,
   * environments/launchers/local.ts) or `fargate` (an ECS Fargate task, launchers/fargate.ts).
   */
  KEEL_LAUNCHER: z.enum(["local", "fargate"]).optional(),
  /** KEEL_LAUNCHER=fargate: the cluster (name or ARN) the runner tasks run in. */
  KEEL_LAUNCHER_FARGATE_CLUSTER: z.string().min(1).optional(),
  /** KEEL_LAUNCHER=fargate: the runner's task definition (family, family:revision or ARN). */
  KEEL_LAUNCHER_FARGATE_TASK_DEFINITION: z.string().min(1).optional(),
  /** KEEL_LAUNCHER=fargate: the runner container's name in it. */
  KEEL_LAUNCHER_FARGATE_CONTAINER: z.string().min(1).default("runner"),
  /** KEEL_LAUNCHER=fargate: comma-separated subnet ids of the runner tasks. */
  KEEL_LAUNCHER_FARGATE_SUBNETS: idList("subnet").optional(),
  /** KEEL_LAUNCHER=fargate: comma-separated security group ids of the runner tasks. */
  KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS: idList("sg").optional(),
  /** KEEL_LAUNCHER=fargate: a public IP per task (public subnets without NAT); default false. */
  KEEL_LAUNCHER_FARGATE_ASSIGN_PUBLIC_IP: booleanFlag.default(false),
  /** The API's URL as launched runners reach it (required with KEEL_LAUNCHER). */
  KEEL_LAUNCHER_API_URL: z.url().optional(),
  /** A launched runner with no call for this long stops. */
  KEEL_LAUNCHER_IDLE_SECONDS: z.coerce.number().int().positive().default(DEFAULT_LAUNCHED_IDLE_SECONDS),
  KEEL_SANDBOX_MAX_SECONDS: z.coerce
    .number()
    .positive()
    .default(DEFAULT_PROCESS_LIMITS.wallTimeMs / 1000),
});

/** Every variable the worker's configuration reads (the names of WorkerEnvSchema). */
export const WORKER_SETTING_NAMES: readonly string[] = Object.keys(WorkerEnvSchema.shape);

export interface WorkerConfig {
  temporal: TemporalSettings;
  taskQueue: string;
  workspaceRoot: string;
  workflowBundlePath?: string;
  /** The traced prebuilt bundle a worker with telemetry on loads (KEEL_WORKFLOW_BUNDLE_TRACED). */
  tracedWorkflowBundlePath?: string;
  maxConcurrentActivities: number;
  /** Default 60 s (KEEL_SHUTDOWN_GRACE_SECONDS). */
  shutdownGraceMs?: number;
  s3: S3Settings;
  /** Options of the provider SDK clients (stream, timeout, headers, prompt caching); default: the environment's keys and URLs only. */
  providers?: ProviderConfig;
  sandbox: SandboxConfig;
  /** The one tenant served (KEEL_SINGLE_TENANT); always set when the sandbox is off. */
  singleTenant?: string;
  snapshotMaxBytes: number;
  /** False with KEEL_WORKER_TOOLS=off: no tool call runs on this worker (environments only); default true. */
  workerTools?: boolean;
  /** How often a run paused at its tenant's budget asks again (ms; KEEL_TENANT_BUDGET_RECHECK_SECONDS). */
  tenantBudgetRecheckMs?: number;
  /** 0 = never evict. */
  workspaceIdleEvictMs: number;
  /** Hosts git workspace sources may name (KEEL_GIT_HOSTS); default DEFAULT_GIT_HOSTS. */
  gitHosts?: GitHosts;
  /** How live events go to run streams, or false (KEEL_LIVE_EVENTS, KEEL_LIVE_EVENTS_INTERVAL_MS; default on, 250 ms). */
  liveEvents?: LiveEventOptions | false;
  /** Runners this worker launches for `launched` environments (KEEL_LAUNCHER); absent: none. */
  launcher?: LauncherConfig;
}

/** Throws one readable error listing every invalid variable (values of secrets are never shown). */
export function workerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const parsed = WorkerEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new Error(`Invalid worker configuration: ${describeIssues(parsed.error)}`);
  }
  const values = parsed.data;
  // A worker that runs no tool call (KEEL_WORKER_TOOLS=off) needs no sandbox to serve every tenant.
  if (
    values.KEEL_SANDBOX === "off" &&
    values.KEEL_SINGLE_TENANT === undefined &&
    values.KEEL_WORKER_TOOLS === "on"
  ) {
    throw new Error(
      "Invalid worker configuration: KEEL_SANDBOX=off requires KEEL_SINGLE_TENANT=<tenant id> (or KEEL_WORKER_TOOLS=off, where the worker runs no tool call). Without the sandbox a tool command reads the worker's secrets and every workspace on it, so such a worker may serve one tenant only.",
    );
  }
  const passEnv = values.KEEL_SANDBOX_PASS_ENV.split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  assertPassableNames(passEnv);
  const { modelUrls, gitHosts } = outboundSettings(values, env);
  const fullNetwork = parseFullNetworkAccess(values.KEEL_SANDBOX_NETWORK_FULL);
  return {
    temporal: temporalSettings(values),
    taskQueue: values.KEEL_TASK_QUEUE,
    workspaceRoot: values.KEEL_WORKSPACE_ROOT ?? join(process.cwd(), ".keel/workspaces"),
    liveEvents: values.KEEL_LIVE_EVENTS === "on" && {
      ...DEFAULT_LIVE_EVENT_OPTIONS,
      intervalMs: values.KEEL_LIVE_EVENTS_INTERVAL_MS,
    },
    workflowBundlePath: values.KEEL_WORKFLOW_BUNDLE,
    tracedWorkflowBundlePath: values.KEEL_WORKFLOW_BUNDLE_TRACED,
    maxConcurrentActivities: values.KEEL_MAX_CONCURRENT_ACTIVITIES,
    shutdownGraceMs: values.KEEL_SHUTDOWN_GRACE_SECONDS * 1000,
    s3: s3SettingsFromEnv(env),
    providers: {
      openai: definedOnly({
        stream: values.KEEL_OPENAI_STREAM,
        timeoutMs: values.KEEL_OPENAI_TIMEOUT_MS,
        headers: values.KEEL_OPENAI_HEADERS,
      }),
      anthropic: definedOnly({
        stream: values.KEEL_ANTHROPIC_STREAM,
        timeoutMs: values.KEEL_ANTHROPIC_TIMEOUT_MS,
        headers: values.KEEL_ANTHROPIC_HEADERS,
        promptCaching: values.KEEL_ANTHROPIC_PROMPT_CACHING,
      }),
      env,
      modelUrls,
    },
    gitHosts,
    ...(values.KEEL_SINGLE_TENANT !== undefined ? { singleTenant: values.KEEL_SINGLE_TENANT } : {}),
    snapshotMaxBytes: values.KEEL_SNAPSHOT_MAX_BYTES,
    ...(values.KEEL_WORKER_TOOLS === "off" ? { workerTools: false } : {}),
    tenantBudgetRecheckMs: values.KEEL_TENANT_BUDGET_RECHECK_SECONDS * 1000,
    ...launcherSettings(values),
    workspaceIdleEvictMs: values.KEEL_WORKSPACE_IDLE_EVICT_SECONDS * 1000,
    sandbox: {
      isolation: values.KEEL_SANDBOX === "off" ? "off" : "bwrap",
      passEnv,
      fullNetwork,
      limits: {
        memoryBytes: values.KEEL_SANDBOX_MEMORY_MB * MIB,
        processes: values.KEEL_SANDBOX_MAX_PROCESSES,
        cpuSeconds: values.KEEL_SANDBOX_CPU_SECONDS,
        fileSizeBytes: values.KEEL_SANDBOX_MAX_FILE_MB * MIB,
        tmpBytes: values.KEEL_SANDBOX_TMP_MB * MIB,
        wallTimeMs: values.KEEL_SANDBOX_MAX_SECONDS * 1000,
      },
    },
  };
}

/**
 * KEEL_MODEL_URLS and KEEL_GIT_HOSTS, checked at start: a malformed entry, or a key variable named
 * in KEEL_MODEL_URLS that is not set, stops the worker with the setting's name in the error.
 */
function outboundSettings(
  values: { KEEL_MODEL_URLS?: string; KEEL_GIT_HOSTS?: string },
  env: NodeJS.ProcessEnv,
): { modelUrls: ModelUrlEntry[]; gitHosts: GitHosts } {
  try {
    const modelUrls = parseModelUrls(values.KEEL_MODEL_URLS);
    const unset = modelUrls.filter((entry) => entry.keyVariable && !env[entry.keyVariable]);
    if (unset.length > 0) {
      throw new Error(
        `${MODEL_URLS_SETTING}: ${unset.map((entry) => entry.keyVariable).join(", ")} named as a key but not set`,
      );
    }
    return { modelUrls, gitHosts: parseGitHosts(values.KEEL_GIT_HOSTS) };
  } catch (error) {
    throw new Error(
      `Invalid worker configuration: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** `record` without its undefined fields (unset options keep the providers' defaults). */
function definedOnly<T extends object>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Partial<T>;
}

function launcherSettings(values: z.infer<typeof WorkerEnvSchema>): Pick<WorkerConfig, "launcher"> {
  if (values.KEEL_LAUNCHER === undefined) return {};
  if (values.KEEL_LAUNCHER_API_URL === undefined)
    throw new Error(
      "Invalid worker configuration: KEEL_LAUNCHER needs KEEL_LAUNCHER_API_URL (the API's URL for its runners).",
    );
  const shared = { apiUrl: values.KEEL_LAUNCHER_API_URL, idleMs: values.KEEL_LAUNCHER_IDLE_SECONDS * 1000 };
  if (values.KEEL_LAUNCHER === "local") return { launcher: { kind: "local", ...shared } };
  const {
    KEEL_LAUNCHER_FARGATE_CLUSTER: cluster,
    KEEL_LAUNCHER_FARGATE_TASK_DEFINITION: taskDefinition,
    KEEL_LAUNCHER_FARGATE_SUBNETS: subnets,
    KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS: securityGroups,
  } = values;
  if (!cluster || !taskDefinition || !subnets || !securityGroups) {
    const missing = Object.entries({
      KEEL_LAUNCHER_FARGATE_CLUSTER: cluster,
      KEEL_LAUNCHER_FARGATE_TASK_DEFINITION: taskDefinition,
      KEEL_LAUNCHER_FARGATE_SUBNETS: subnets,
      KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS: securityGroups,
    })
      .filter(([, value]) => value === undefined)
      .map(([name]) => name);
    throw new Error(`Invalid worker configuration: KEEL_LAUNCHER=fargate needs ${missing.join(", ")}.`);
  }
  return {
    launcher: {
      kind: "fargate",
      ...shared,
      cluster,
      taskDefinition,
      container: values.KEEL_LAUNCHER_FARGATE_CONTAINER,
      subnets,
      securityGroups,
      assignPublicIp: values.KEEL_LAUNCHER_FARGATE_ASSIGN_PUBLIC_IP,
    },
  };
}

/**
 * The prebuilt workflow bundle a worker loads (the long-running worker's shared one, the Lambda
 * worker), if any: with telemetry on the traced one (KEEL_WORKFLOW_BUNDLE_TRACED) when given, so the run's workflow spans are made; otherwise
 * KEEL_WORKFLOW_BUNDLE. Undefined: the worker bundles `src/workflows` at start.
 */
export function workflowBundleOf(config: WorkerConfig, traced: boolean): string | undefined {
  return (traced ? config.tracedWorkflowBundlePath : undefined) ?? config.workflowBundlePath;
}
