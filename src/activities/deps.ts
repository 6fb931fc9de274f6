/** What activities need from the worker process: created once per process, shared by every call. */

import type { Launcher } from "../environments/launchers/types";
import type { EnvironmentStore } from "../environments/store";
import type { EvalStore } from "../evals/eval-store";
import type { SlackClientSettings } from "../integrations/slack/reply";
import type { WebhookSettings } from "../integrations/webhook-sender";
import type { McpConnections } from "../mcp/connections";
import type { ModelCatalog } from "../providers/models";
import type { Provider } from "../providers/types";
import type { McpToolListings } from "../store/mcp-tool-listings";
import type { SessionStore } from "../store/session-store";
import type { ToolCallMarkers } from "../store/tool-call-markers";
import type { WorkspaceSnapshots } from "../store/workspace-snapshots";
import type { TenantBudgetCheck } from "../tenants/budget-check";
import type { TenantStore } from "../tenants/store";
import type { TenantUsage } from "../tenants/usage";
import type { WebhookStore } from "../tenants/webhooks";
import type { GitHosts } from "../tools/git-source";
import type { SandboxConfig } from "../tools/sandbox";
import type { SecretResolver } from "../vault/types";
import type { LiveEventOptions } from "./live-events";

/** What the webhook activities need: the endpoints' store and the process's webhook settings. */
export interface WebhookDeps {
  store: WebhookStore;
  settings: WebhookSettings;
}

export interface ActivityDeps {
  store: SessionStore;
  markers: ToolCallMarkers;
  provider: Provider;
  catalog: ModelCatalog;
  /** Folder holding one workspace per session on this worker. */
  workspaceRoot: string;
  /** This worker's own task queue: tool activities of sessions it holds go there. */
  workerTaskQueue: string;
  /**
   * The deployment's shared task queue. A call taken from it may land on any worker (on Lambda
   * every call does: no execution environment has a queue of its own), so it checks that this
   * worker's copy of the workspace is current first. Calls on a worker's own queue were routed
   * there by a claim, which checked once. Absent: no call checks.
   */
  sharedTaskQueue?: string;
  /** Workspace snapshots in S3 (snapshot after tool batches, restore anywhere). */
  snapshots: WorkspaceSnapshots;
  /** Largest workspace (bytes of files) a snapshot records. */
  snapshotMaxBytes: number;
  /**
   * False when the deployment runs no tool call on its workers (KEEL_WORKER_TOOLS=off): an
   * in-worker call gets an error result instead of running. Default true.
   */
  workerTools?: boolean;
  /** Isolation and limits of the processes tools start (checked at worker start). */
  sandbox: SandboxConfig;
  /** Hosts git workspace sources may name (KEEL_GIT_HOSTS); default DEFAULT_GIT_HOSTS. */
  gitHosts?: GitHosts;
  /** The one tenant this worker serves (KEEL_SINGLE_TENANT): activities of others are refused. */
  singleTenant?: string;
  /** How live events (deltas, tool output so far) go to the run's stream, or false for not at all; default on. */
  liveEvents?: LiveEventOptions | false;
  /** Calls handed to runner environments (absent: runs naming one fail their tool calls). */
  environments?: EnvironmentStore;
  /** Starts runners for `launched` environments (absent: their calls fail, saying so). */
  launcher?: Launcher;
  /**
   * Aborted when the worker starts to stop: activities that only watch (a runner environment's
   * call) hand over to another worker at once instead of holding the shutdown for its grace time.
   */
  stopping?: AbortSignal;
  /** The worker's MCP clients (one connection per session and server). */
  mcp?: McpConnections;
  /** MCP tool listings by digest (written by `listMcpTools`, read by `llmTurn`). */
  mcpListings?: McpToolListings;
  /** Where each tenant's usage is recorded per day (absent: not recorded). */
  usage?: TenantUsage;
  /** The tenants' settings (quotas a schedule's firing is admitted under; absent: none checked). */
  tenants?: TenantStore;
  /** Whether a tenant has used up its token or cost budget (absent: tenant budgets pause nothing). */
  tenantBudget?: TenantBudgetCheck;
  /** Where replies to Slack threads go (the worker's KEEL_SLACK_BOT_TOKEN and KEEL_SLACK_API_URL). */
  slack?: SlackClientSettings;
  /** Tenant secrets, read fresh for each call that names them (absent: no vault configured). */
  vault?: SecretResolver;
  /** Webhook endpoints and the process's webhook settings (absent: no vault, so no webhooks). */
  webhooks?: WebhookDeps;
  /** Evals and their trials' results (absent: eval trials fail, saying so). */
  evals?: EvalStore;
}
