/**
 * What the API's route modules are given: the app's dependencies, a clock and a logger. Apart from
 * app.ts, so the routes depend on this and app.ts on the routes, never the reverse.
 */

import type { EnvironmentStore } from "../environments/store";
import type { EvalStore } from "../evals/eval-store";
import type { SlackReply } from "../integrations/slack/reply";
import type { ModelCatalog } from "../providers/models";
import type { RunClient } from "../run-client/run-client";
import type { JsonObjects } from "../store/json-objects";
import type { McpToolListings } from "../store/mcp-tool-listings";
import type { SessionStore } from "../store/session-store";
import type { ToolCallMarkers } from "../store/tool-call-markers";
import type { WorkspaceSnapshots } from "../store/workspace-snapshots";
import type { QuotaGate } from "../tenants/admission";
import type { KeyResolver } from "../tenants/key-cache";
import type { SecretStore } from "../tenants/secrets";
import type { StoredSlackTeams } from "../tenants/slack-teams";
import type { TenantStore } from "../tenants/store";
import type { TenantUsage } from "../tenants/usage";
import type { WebhookStore } from "../tenants/webhooks";
import type { ApiConfig } from "./config";

/** `outbound` absent: the settings' defaults (no KEEL_MODEL_URLS, no base URLs, DEFAULT_GIT_HOSTS). */
type ApiConfigSubset = Pick<
  ApiConfig,
  | "apiKeys"
  | "bodyLimitBytes"
  | "allowDirectoryWorkspaces"
  | "fullNetwork"
  | "sseMaxSeconds"
  | "slack"
  | "defaultModel"
  | "singleTenant"
> &
  Partial<Pick<ApiConfig, "adminKeyDigests" | "workerTools" | "webhooks">> &
  Partial<Pick<ApiConfig, "outbound" | "viewer">>;

export interface ApiDependencies {
  config: ApiConfigSubset;
  /** The run client; in production a lazy connection (see `LazyRunClient`). */
  runs: () => Promise<RunClient>;
  /** Told about every error escaping a route, so a dead Temporal connection can be dropped. */
  onFailure?: (error: unknown) => void;
  store: SessionStore;
  /** Workspace snapshots (export and import with the workspace). */
  snapshots: WorkspaceSnapshots;
  /** Idempotency records and chat thread mappings. */
  objects: JsonObjects;
  /** Evals and their trials' results (absent: the eval routes answer 501). */
  evals?: EvalStore;
  catalog: ModelCatalog;
  /** Posts a chat reply (Slack); default: `postSlackReply` with the configured token. */
  slackReply?: SlackReply;
  now?: () => number;
  /** Structured log lines; never receives headers, keys or bodies. */
  log?: (record: Record<string, unknown>) => void;
  /** Environments and runner calls (absent: no environment routes are served). */
  environments?: {
    store: EnvironmentStore;
    markers: ToolCallMarkers;
    mcpListings?: McpToolListings;
    /** Claims one runner token may have waiting at once in this process (default 32). */
    waitingClaimsPerToken?: number;
  };
  /** Tenants, keys, settings and quotas kept in S3 (absent: static keys only, no admin API). */
  tenants?: TenantServices;
  /** Tenant secrets (absent: no KEEL_VAULT_* setting; the secrets routes answer 503). */
  vault?: SecretStore;
  /** Webhook endpoints and deliveries (absent: no vault; the webhook routes answer 503). */
  webhooks?: WebhookStore;
}

/** Context handed to the route modules. */
export interface RouteContext extends ApiDependencies {
  now: () => number;
  log: (record: Record<string, unknown>) => void;
}

/** The tenant store and what the API builds on it. */
export interface TenantServices {
  store: TenantStore;
  keys: KeyResolver;
  quotas: QuotaGate;
  usage: TenantUsage;
  /** The Slack teams tenants map in their settings (cached like keys). */
  slackTeams: StoredSlackTeams;
}
