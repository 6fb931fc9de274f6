/** API configuration from the environment, validated once when the app is built. */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { DEFAULT_RUN_SETTINGS } from "../contracts/runs";
import { booleanFlag, parseSettings, type SettingsShape } from "../core/env-settings";
import { isValidId } from "../core/ids";
import { TEMPORAL_ENV, type TemporalSettings, temporalSettings } from "../core/temporal-settings";
import { WEBHOOK_ENV, type WebhookSettings, webhookSettingsOf } from "../integrations/webhook-sender";
import { MCP_ENV, type McpPolicy, mcpPolicyFromEnv } from "../mcp/policy";
import { configuredBaseUrls, type Family, type ModelUrlEntry, parseModelUrls } from "../providers/model-urls";
import { PROVIDER_ENV } from "../providers/settings";
import { S3_ENV, type S3Settings, s3SettingsFromEnv } from "../store/s3-config";
import { TELEMETRY_ENV, type TelemetrySettings, telemetrySettingsFromEnv } from "../telemetry/settings";
import { parseSlackTeams, type SlackTeams } from "../tenants/slack-team-tools";
import { type GitHosts, parseGitHosts } from "../tools/git-source";
import { type FullNetworkAccess, parseFullNetworkAccess } from "../tools/network-access";
import { VAULT_ENV, type VaultSettings, vaultSettings } from "../vault/settings";
import { WORKER_ENV } from "../worker/env";

/** Default request body limit: below API Gateway's and Lambda's 6 MB payload limit. */
const DEFAULT_BODY_LIMIT_BYTES = 5 * 1024 * 1024;
const DEFAULT_API_PORT = 8787;
const DEFAULT_SLACK_STOP_WORD = "stop";

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** `{"<sha256 hex of the key>": "<tenant id>"}`: keys are never configured in clear. */
const ApiKeysSchema = z.record(
  z.string().regex(SHA256_HEX, "must be the lowercase sha256 hex digest of an API key"),
  z.string().refine(isValidId, "tenant ids match ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"),
);
export type ApiKeys = z.infer<typeof ApiKeysSchema>;

/** The API's variables: its own, and those of the parts it reaches (Temporal, S3, models, MCP, telemetry). */
export const API_ENV = {
  ...TEMPORAL_ENV,
  ...S3_ENV,
  OPENAI_BASE_URL: PROVIDER_ENV.OPENAI_BASE_URL,
  ANTHROPIC_BASE_URL: PROVIDER_ENV.ANTHROPIC_BASE_URL,
  KEEL_MODELS_FILE: PROVIDER_ENV.KEEL_MODELS_FILE,
  KEEL_MODEL_URLS: PROVIDER_ENV.KEEL_MODEL_URLS,
  KEEL_MCP_HOSTS: MCP_ENV.KEEL_MCP_HOSTS,
  ...TELEMETRY_ENV,
  ...VAULT_ENV,
  ...WEBHOOK_ENV,
  KEEL_DEFAULT_MODEL: z
    .string()
    .min(1)
    .default(DEFAULT_RUN_SETTINGS.model)
    .describe("Model of runs whose message names none, and of branch summaries and compactions."),
  KEEL_API_KEYS: z
    .string()
    .optional()
    .describe(
      'Tenants\' API keys (secret): JSON {"<sha256 hex of the key>": "<tenant id>"}; keys are never configured in clear.',
    ),
  KEEL_API_KEYS_FILE: z
    .string()
    .optional()
    .describe("A file holding the same JSON as KEEL_API_KEYS (both are merged)."),
  KEEL_ADMIN_KEY_SHA256: z
    .string()
    .optional()
    .describe(
      "Comma-separated sha256 digests of the operator's keys for the admin API (unset: no admin access).",
    ),
  KEEL_API_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_BODY_LIMIT_BYTES)
    .describe("Largest request body, in bytes (below API Gateway's and Lambda's 6 MB)."),
  KEEL_API_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65_535)
    .default(DEFAULT_API_PORT)
    .describe("The port the Node API server listens on."),
  KEEL_API_ALLOW_DIRECTORY_WORKSPACES: booleanFlag
    .default(false)
    .describe("Lets callers start a workspace from a directory on the worker machine."),
  KEEL_WORKER_TOOLS: WORKER_ENV.KEEL_WORKER_TOOLS,
  KEEL_SANDBOX_NETWORK_FULL: WORKER_ENV.KEEL_SANDBOX_NETWORK_FULL,
  KEEL_API_SSE_MAX_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      "Longest life of one event stream in seconds; 0 = until the run ends. Behind API Gateway keep it under 29.",
    ),
  KEEL_SINGLE_TENANT: WORKER_ENV.KEEL_SINGLE_TENANT,
  KEEL_SLACK_SIGNING_SECRET: z
    .string()
    .min(1)
    .optional()
    .describe("The Slack app's signing secret (secret); unset: the Slack route answers 404."),
  KEEL_SLACK_BOT_TOKEN: WORKER_ENV.KEEL_SLACK_BOT_TOKEN,
  KEEL_SLACK_TEAMS: z
    .string()
    .optional()
    .describe("JSON: Slack team id → tenant id, or → {tenant, allow, ask} (docs/integrations.md)."),
  KEEL_SLACK_TEAMS_FILE: z
    .string()
    .optional()
    .describe("A file holding the same JSON as KEEL_SLACK_TEAMS (both are merged)."),
  KEEL_SLACK_API_URL: WORKER_ENV.KEEL_SLACK_API_URL,
  KEEL_SLACK_STOP_WORD: z
    .string()
    .min(1)
    .default(DEFAULT_SLACK_STOP_WORD)
    .describe("A thread message consisting of this word (case-insensitive) aborts the run."),
  KEEL_GIT_HOSTS: WORKER_ENV.KEEL_GIT_HOSTS,
  KEEL_TEMPORAL_UI_URL: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe("The Temporal UI's address: the session viewer links each model and tool call there."),
  KEEL_API_PUBLIC_URL: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe(
      "The API's address as readers' browsers reach it: runs link to their viewer page from the Temporal UI.",
    ),
} satisfies SettingsShape;

/** Where callers may point outbound requests: checked in message bodies, again on the worker. */
interface OutboundSettings {
  /** KEEL_MODEL_URLS. */
  modelUrls: ModelUrlEntry[];
  /** OPENAI_BASE_URL / ANTHROPIC_BASE_URL, when set on the API (set them as on the worker for one-line models to name them). */
  providerBaseUrls: Partial<Record<Family, string>>;
  /** KEEL_GIT_HOSTS. */
  gitHosts: GitHosts;
  /** KEEL_MCP_HOSTS. */
  mcp?: McpPolicy;
}

export interface SlackConfig {
  signingSecret: string;
  /** Each Slack team's tenant and the tools of the runs its threads start; other teams start nothing. */
  teams: SlackTeams;
  botToken?: string;
  /** Base URL of Slack's Web API (`https://slack.com/api/` when unset). */
  apiUrl?: string;
  /** A thread message consisting of this word (case-insensitive) aborts the run. */
  stopWord: string;
}

export interface ApiConfig {
  temporal: TemporalSettings;
  taskQueue: string;
  defaultModel: string;
  s3: S3Settings;
  apiKeys: ApiKeys;
  /** KEEL_ADMIN_KEY_SHA256: digests of the operator's admin keys (never tenant keys). */
  adminKeyDigests: string[];
  bodyLimitBytes: number;
  port: number;
  allowDirectoryWorkspaces: boolean;
  /**
   * False with KEEL_WORKER_TOOLS=off: a run whose tools would run on the workers (no environment,
   * or `worker`) is refused with 400 `environment-required`. Default true.
   */
  workerTools?: boolean;
  /** Who may ask for network "full" (KEEL_SANDBOX_NETWORK_FULL); absent = nobody. */
  fullNetwork?: FullNetworkAccess;
  sseMaxSeconds: number;
  /** The one tenant served (KEEL_SINGLE_TENANT); unset: every tenant with a key. */
  singleTenant?: string;
  /** Absent when no signing secret is configured: the Slack route then answers 404. */
  slack?: SlackConfig;
  outbound: OutboundSettings;
  /** The session viewer's links (docs/api.md, "Session viewer"). */
  viewer: ViewerLinks;
  /** The operator's model catalog file (KEEL_MODELS_FILE). */
  modelsFile?: string;
  /** Spans and metrics (KEEL_OTEL_*); absent: telemetry off. */
  telemetry?: TelemetrySettings;
  /** Tenant secrets' key (KEEL_VAULT_KEY_FILE or KEEL_VAULT_KMS_KEY_ID); absent: no secrets. */
  vault?: VaultSettings;
  /** Webhook endpoints' hosts, rotation overlap and deliveries' retries (KEEL_WEBHOOK_*). */
  webhooks: WebhookSettings;
}

interface ViewerLinks {
  /** KEEL_TEMPORAL_UI_URL and the namespace the runs are in. */
  temporalUi?: { url: string; namespace: string };
  /** KEEL_API_PUBLIC_URL. */
  publicUrl?: string;
}

/** Parses the API key map (JSON text); the message never quotes the text (it may hold secrets). */
export function parseApiKeys(text: string, source: string): ApiKeys {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`Invalid API keys in ${source}: not JSON`);
  }
  const parsed = ApiKeysSchema.safeParse(value);
  if (!parsed.success) {
    // Issue paths would quote the map's keys, which may be clear-text keys pasted by mistake.
    const messages = [...new Set(parsed.error.issues.map((issue) => issue.message))];
    const digestHint = parsed.error.issues.some((issue) => issue.code === "invalid_key")
      ? "every key must be the lowercase sha256 hex digest of an API key; "
      : "";
    throw new Error(`Invalid API keys in ${source}: ${digestHint}${messages.join("; ")}`);
  }
  return parsed.data;
}

/** KEEL_ADMIN_KEY_SHA256's digests; a digest that is also a tenant's key is refused. */
function parseAdminDigests(text: string | undefined, apiKeys: ApiKeys): string[] {
  const digests = (text ?? "")
    .split(",")
    .map((digest) => digest.trim())
    .filter(Boolean);
  for (const digest of digests) {
    if (!SHA256_HEX.test(digest))
      throw new Error(
        "Invalid API configuration: KEEL_ADMIN_KEY_SHA256: every entry must be the lowercase sha256 hex digest of an admin key",
      );
    if (digest in apiKeys)
      throw new Error(
        "Invalid API configuration: KEEL_ADMIN_KEY_SHA256 names a tenant's API key; use a separate key",
      );
  }
  return digests;
}

/** Throws one readable error listing every invalid variable (secret values are never shown). */
export function apiConfigFromEnv(env: NodeJS.ProcessEnv): ApiConfig {
  const values = parseSettings(API_ENV, env, "API");
  const apiKeys = {
    ...(values.KEEL_API_KEYS_FILE
      ? parseApiKeys(readFileSync(values.KEEL_API_KEYS_FILE, "utf8"), "KEEL_API_KEYS_FILE")
      : {}),
    ...(values.KEEL_API_KEYS ? parseApiKeys(values.KEEL_API_KEYS, "KEEL_API_KEYS") : {}),
  };
  const adminKeyDigests = parseAdminDigests(values.KEEL_ADMIN_KEY_SHA256, apiKeys);
  let outbound: OutboundSettings;
  let telemetry: TelemetrySettings | undefined;
  let vault: VaultSettings | undefined;
  try {
    telemetry = telemetrySettingsFromEnv("keel-api", env);
    vault = vaultSettings(values);
    outbound = {
      modelUrls: parseModelUrls(values.KEEL_MODEL_URLS),
      providerBaseUrls: configuredBaseUrls(env),
      gitHosts: parseGitHosts(values.KEEL_GIT_HOSTS),
      mcp: mcpPolicyFromEnv(env),
    };
  } catch (error) {
    throw new Error(`Invalid API configuration: ${error instanceof Error ? error.message : String(error)}`);
  }
  let slack: SlackConfig | undefined;
  if (values.KEEL_SLACK_SIGNING_SECRET) {
    const teams = {
      ...(values.KEEL_SLACK_TEAMS_FILE
        ? parseSlackTeams(readFileSync(values.KEEL_SLACK_TEAMS_FILE, "utf8"), "KEEL_SLACK_TEAMS_FILE")
        : {}),
      ...(values.KEEL_SLACK_TEAMS ? parseSlackTeams(values.KEEL_SLACK_TEAMS, "KEEL_SLACK_TEAMS") : {}),
    };
    const foreign = Object.entries(teams).filter(
      ([, team]) => values.KEEL_SINGLE_TENANT !== undefined && team.tenantId !== values.KEEL_SINGLE_TENANT,
    );
    if (foreign.length > 0) {
      throw new Error(
        `Invalid API configuration: KEEL_SINGLE_TENANT is ${values.KEEL_SINGLE_TENANT}, but KEEL_SLACK_TEAMS maps ${foreign.map(([team]) => team).join(", ")} to another tenant`,
      );
    }
    slack = {
      signingSecret: values.KEEL_SLACK_SIGNING_SECRET,
      teams,
      botToken: values.KEEL_SLACK_BOT_TOKEN,
      apiUrl: values.KEEL_SLACK_API_URL,
      stopWord: values.KEEL_SLACK_STOP_WORD,
    };
  }
  return {
    temporal: temporalSettings(values),
    taskQueue: values.KEEL_TASK_QUEUE,
    defaultModel: values.KEEL_DEFAULT_MODEL,
    s3: s3SettingsFromEnv(env),
    apiKeys,
    adminKeyDigests,
    bodyLimitBytes: values.KEEL_API_BODY_LIMIT_BYTES,
    port: values.KEEL_API_PORT,
    allowDirectoryWorkspaces: values.KEEL_API_ALLOW_DIRECTORY_WORKSPACES,
    ...(values.KEEL_WORKER_TOOLS === "off" ? { workerTools: false } : {}),
    fullNetwork: parseFullNetworkAccess(values.KEEL_SANDBOX_NETWORK_FULL),
    sseMaxSeconds: values.KEEL_API_SSE_MAX_SECONDS,
    ...(values.KEEL_SINGLE_TENANT !== undefined ? { singleTenant: values.KEEL_SINGLE_TENANT } : {}),
    slack,
    outbound,
    ...(values.KEEL_MODELS_FILE ? { modelsFile: values.KEEL_MODELS_FILE } : {}),
    ...(telemetry ? { telemetry } : {}),
    ...(vault ? { vault } : {}),
    webhooks: webhookSettingsOf(values),
    viewer: {
      ...(values.KEEL_TEMPORAL_UI_URL !== undefined
        ? { temporalUi: { url: values.KEEL_TEMPORAL_UI_URL, namespace: values.KEEL_TEMPORAL_NAMESPACE } }
        : {}),
      ...(values.KEEL_API_PUBLIC_URL !== undefined ? { publicUrl: values.KEEL_API_PUBLIC_URL } : {}),
    },
  };
}
