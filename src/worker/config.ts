/** Worker configuration from the environment, validated once at start. */

import { join } from "node:path";
import type { z } from "zod";
import { DEFAULT_LIVE_EVENT_OPTIONS, type LiveEventOptions } from "../activities/live-events";
import { parseSettings } from "../core/env-settings";
import { type TemporalSettings, temporalSettings } from "../core/temporal-settings";
import type { LauncherConfig } from "../environments/launchers/types";
import type { SlackClientSettings } from "../integrations/slack/reply";
import { type WebhookSettings, webhookSettingsOf } from "../integrations/webhook-sender";
import { type McpSettings, mcpSettingsFromEnv } from "../mcp/policy";
import { MODEL_URLS_SETTING, type ModelUrlEntry, parseModelUrls } from "../providers/model-urls";
import type { ProviderConfig } from "../providers/registry";
import { type S3Settings, s3SettingsFromEnv } from "../store/s3-config";
import { type TelemetrySettings, telemetrySettingsFromEnv } from "../telemetry/settings";
import { assertPassableNames, hostEnvironment } from "../tools/environment";
import { type GitHosts, parseGitHosts } from "../tools/git-source";
import { parseFullNetworkAccess } from "../tools/network-access";
import type { SandboxConfig } from "../tools/sandbox";
import { type VaultSettings, vaultSettings } from "../vault/settings";
import { MIB, WORKER_ENV } from "./env";

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
  /** What runs' MCP servers may have here (KEEL_MCP_*), with the values of the secrets it lists; default: nothing. */
  mcp?: McpSettings;
  /** The operator's model catalog file (KEEL_MODELS_FILE). */
  modelsFile?: string;
  /** Where Slack replies go (KEEL_SLACK_BOT_TOKEN, KEEL_SLACK_API_URL). */
  slack?: SlackClientSettings;
  /** Spans and metrics (KEEL_OTEL_*); absent: telemetry off. */
  telemetry?: TelemetrySettings;
  /** Tests only: crash points (KEEL_FAILPOINTS). */
  failpoints?: string;
  /** Tenant secrets' key (KEEL_VAULT_KEY_FILE or KEEL_VAULT_KMS_KEY_ID); absent: no secrets. */
  vault?: VaultSettings;
  /** Webhook deliveries' hosts, retries and timeout (KEEL_WEBHOOK_*). */
  webhooks?: WebhookSettings;
}

/** Throws one readable error listing every invalid variable (values of secrets are never shown). */
export function workerConfigFromEnv(env: NodeJS.ProcessEnv): WorkerConfig {
  const values = parseSettings(WORKER_ENV, env, "worker");
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
  const telemetry = invalidAsWorkerConfiguration(() => telemetrySettingsFromEnv("keel-worker", env));
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
      breaker: {
        failures: values.KEEL_PROVIDER_BREAKER_FAILURES,
        cooldownMs: values.KEEL_PROVIDER_BREAKER_COOLDOWN_MS,
      },
    },
    gitHosts,
    ...(values.KEEL_SINGLE_TENANT !== undefined ? { singleTenant: values.KEEL_SINGLE_TENANT } : {}),
    snapshotMaxBytes: values.KEEL_SNAPSHOT_MAX_BYTES,
    ...(values.KEEL_WORKER_TOOLS === "off" ? { workerTools: false } : {}),
    tenantBudgetRecheckMs: values.KEEL_TENANT_BUDGET_RECHECK_SECONDS * 1000,
    ...launcherSettings(values),
    mcp: invalidAsWorkerConfiguration(() => mcpSettingsFromEnv(env)),
    ...definedOnly({ vault: invalidAsWorkerConfiguration(() => vaultSettings(values)) }),
    webhooks: webhookSettingsOf(values),
    ...(values.KEEL_MODELS_FILE ? { modelsFile: values.KEEL_MODELS_FILE } : {}),
    slack: definedOnly({ token: values.KEEL_SLACK_BOT_TOKEN, apiUrl: values.KEEL_SLACK_API_URL }),
    ...(telemetry ? { telemetry } : {}),
    ...(values.KEEL_FAILPOINTS ? { failpoints: values.KEEL_FAILPOINTS } : {}),
    workspaceIdleEvictMs: values.KEEL_WORKSPACE_IDLE_EVICT_SECONDS * 1000,
    sandbox: {
      isolation: values.KEEL_SANDBOX === "off" ? "off" : "bwrap",
      passEnv,
      hostEnv: hostEnvironment(env, passEnv),
      fullNetwork,
      limits: {
        memoryBytes: values.KEEL_SANDBOX_MEMORY_MB * MIB,
        processes: values.KEEL_SANDBOX_MAX_PROCESSES,
        cpuSeconds: values.KEEL_SANDBOX_CPU_SECONDS,
        fileSizeBytes: values.KEEL_SANDBOX_MAX_FILE_MB * MIB,
        tmpBytes: values.KEEL_SANDBOX_TMP_MB * MIB,
        wallTimeMs: values.KEEL_SANDBOX_MAX_SECONDS * 1000,
        workspaceBytes: values.KEEL_WORKSPACE_MAX_MB * MIB,
      },
    },
  };
}

/** `read()`, its error prefixed as the others of this configuration. */
function invalidAsWorkerConfiguration<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw new Error(
      `Invalid worker configuration: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
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

function launcherSettings(values: z.infer<z.ZodObject<typeof WORKER_ENV>>): Pick<WorkerConfig, "launcher"> {
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
