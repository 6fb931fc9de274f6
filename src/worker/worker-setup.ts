/**
 * Worker setup shared by the long-running and the Lambda worker: the activities, the worker
 * options and the tool sandbox check.
 */

import { join } from "node:path";
import { ECSClient } from "@aws-sdk/client-ecs";
import type { S3Client } from "@aws-sdk/client-s3";
import { type ActivityDeps, createActivities } from "../activities";
import { armFailpoints } from "../activities/failpoints";
import { DEFAULT_LIVE_EVENT_OPTIONS } from "../activities/live-events";
import type { KeelActivities } from "../contracts/activities";
import { FargateLauncher } from "../environments/launchers/fargate";
import { LocalLauncher } from "../environments/launchers/local";
import { type Launcher, launchedMcpSettings } from "../environments/launchers/types";
import { EnvironmentStore } from "../environments/store";
import { EvalStore } from "../evals/eval-store";
import { DEFAULT_WEBHOOK_SETTINGS } from "../integrations/webhook-sender";
import { McpConnections } from "../mcp/connections";
import { NO_MCP_SETTINGS } from "../mcp/policy";
import { loadCatalog } from "../providers/models";
import { createProvider } from "../providers/registry";
import { EntryCache } from "../store/entry-cache";
import { McpToolListings } from "../store/mcp-tool-listings";
import { keelDataConverter } from "../store/payload-storage";
import { SessionStore } from "../store/session-store";
import { ToolCallMarkers } from "../store/tool-call-markers";
import { WorkspaceSnapshots } from "../store/workspace-snapshots";
import { instrumentation } from "../telemetry/instrumentation";
import { tracedProvider } from "../telemetry/model-calls";
import { TenantBudgetCheck } from "../tenants/budget-check";
import { createVault } from "../tenants/secrets";
import { TenantStore } from "../tenants/store";
import { TenantUsage, WORKER_TOOL_SECONDS_WAIT_MS } from "../tenants/usage";
import { WebhookStore } from "../tenants/webhooks";
import { probeSandbox, type SandboxConfig } from "../tools/sandbox";
import type { WorkerConfig } from "./config";
import { log } from "./log";

/**
 * The activities over one S3 client; tool calls of sessions this worker holds go to `toolTaskQueue`.
 * Checks the tool sandbox first (throws when it cannot start and KEEL_SANDBOX=off is not set).
 */
export function workerActivities(
  config: WorkerConfig,
  s3: S3Client,
  toolTaskQueue: string,
  mcp: McpConnections = workerMcpConnections(config),
  launcher?: Launcher,
  stopping?: AbortSignal,
): KeelActivities {
  checkSandbox(config.sandbox, config.singleTenant);
  armFailpoints(config.failpoints);
  const catalog = loadCatalog(config.modelsFile ? { modelsFile: config.modelsFile } : {});
  // The catalog's base URLs are places the operator configured: they get the family's key.
  const provider = createProvider({ ...config.providers, catalog });
  // Tool seconds ride with the next model call's usage write (docs/api.md, "Usage").
  const usage = new TenantUsage(s3, config.s3.bucket, config.s3.prefix, {
    toolSecondsWaitMs: WORKER_TOOL_SECONDS_WAIT_MS,
    warn: (message, fields) => log("warn", message, fields),
  });
  stopping?.addEventListener("abort", () => void usage.stopWaiting(), { once: true });
  const tenants = new TenantStore(s3, config.s3.bucket, config.s3.prefix);
  return createActivities({
    store: new SessionStore(s3, config.s3, { cache: new EntryCache() }),
    markers: new ToolCallMarkers(s3, config.s3),
    provider: instrumentation() ? tracedProvider(provider) : provider,
    catalog,
    workspaceRoot: config.workspaceRoot,
    workerTaskQueue: toolTaskQueue,
    sharedTaskQueue: config.taskQueue,
    sandbox: config.sandbox,
    ...(config.singleTenant !== undefined ? { singleTenant: config.singleTenant } : {}),
    snapshots: new WorkspaceSnapshots(s3, config.s3),
    snapshotMaxBytes: config.snapshotMaxBytes,
    ...(config.workerTools === false ? { workerTools: false } : {}),
    gitHosts: config.gitHosts,
    liveEvents: config.liveEvents ?? DEFAULT_LIVE_EVENT_OPTIONS,
    environments: new EnvironmentStore(s3, config.s3.bucket, config.s3.prefix),
    ...(stopping ? { stopping } : {}),
    mcp,
    mcpListings: new McpToolListings(s3, config.s3),
    usage,
    tenants,
    tenantBudget: new TenantBudgetCheck(tenants, usage, {
      ...(config.tenantBudgetRecheckMs !== undefined ? { recheckAfterMs: config.tenantBudgetRecheckMs } : {}),
    }),
    evals: new EvalStore(s3, config.s3.bucket, config.s3.prefix),
    ...(launcher ? { launcher } : {}),
    ...(config.slack ? { slack: config.slack } : {}),
    ...vaultAndWebhooks(config, s3),
  });
}

/** The vault, and the webhooks whose signing secrets it seals (none without a vault). */
function vaultAndWebhooks(
  config: WorkerConfig,
  s3: S3Client,
): Partial<Pick<ActivityDeps, "vault" | "webhooks">> {
  const vault = createVault(config.vault, s3, config.s3);
  if (!vault) return {};
  const settings = config.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;
  return { vault, webhooks: { store: new WebhookStore(s3, config.s3, vault), settings } };
}

/** The launcher of `launched` environments' runners this worker's configuration asks for, if any. */
export function launcherFromConfig(config: WorkerConfig, s3: S3Client): Launcher | undefined {
  const { launcher } = config;
  if (!launcher) return undefined;
  const tokens = new EnvironmentStore(s3, config.s3.bucket, config.s3.prefix);
  const { mounts, policy } = config.mcp ?? NO_MCP_SETTINGS;
  const mcpSettings = launchedMcpSettings(mounts, policy.privateHosts);
  if (launcher.kind === "fargate") {
    // Credentials and region: the worker's own (its task role, AWS_REGION), never the runner's.
    return new FargateLauncher({ ...launcher, ecs: new ECSClient({}), tokens, mcpSettings, log });
  }
  return new LocalLauncher({
    apiUrl: launcher.apiUrl,
    idleMs: launcher.idleMs,
    tokens,
    // Beside the tenants' folders (a leading dot is in no tenant id).
    root: join(config.workspaceRoot, ".launched"),
    isolation: config.sandbox.isolation,
    mcpSettings,
    log,
  });
}

/** The worker's MCP connections (KEEL_MCP_HOSTS, KEEL_MCP_MOUNTS); closed at shutdown. */
export function workerMcpConnections(config: Pick<WorkerConfig, "mcp">): McpConnections {
  return new McpConnections(config.mcp ?? NO_MCP_SETTINGS);
}

/** Worker options every Keel worker shares. */
export function commonWorkerOptions(config: WorkerConfig, s3: S3Client) {
  return {
    dataConverter: keelDataConverter(s3, config.s3),
    // Cancellation reaches an activity with its next heartbeat: send them often enough that an
    // abort lands within a couple of seconds.
    defaultHeartbeatThrottleInterval: "1 second",
    maxHeartbeatThrottleInterval: "2 seconds",
  } as const;
}

/**
 * Refuses to start a worker whose tool sandbox cannot start, unless isolation was explicitly
 * turned off (KEEL_SANDBOX=off), which is logged as a warning at every start.
 */
export function checkSandbox(sandbox: SandboxConfig, singleTenant?: string): void {
  if (sandbox.isolation === "off") {
    log("warn", "tool sandbox is OFF (KEEL_SANDBOX=off): bash runs with the worker's own rights", {
      passEnv: sandbox.passEnv,
      singleTenant,
    });
    return;
  }
  const probe = probeSandbox();
  if (!probe.ok) {
    throw new Error(
      `The tool sandbox (bubblewrap) cannot start on this machine: ${probe.reason}. Install it (apt-get install -y bubblewrap; npm run bootstrap does this when run as root) on a host that allows user namespaces, or set KEEL_SANDBOX=off with KEEL_SINGLE_TENANT=<tenant id> to run tool commands unsandboxed for that one tenant (only for trusted prompts).`,
    );
  }
}
