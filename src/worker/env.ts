/**
 * The worker's environment variables (WORKER_ENV): one schema, each variable with its type, default
 * and description (docs/configuration.md is generated from it). `config.ts` turns the parsed values
 * into the WorkerConfig the worker runs with.
 */
import { z } from "zod";
import { DEFAULT_LIVE_EVENT_OPTIONS } from "../activities/live-events";
import { booleanFlag, type SettingsShape } from "../core/env-settings";
import { isValidId } from "../core/ids";
import { TEMPORAL_ENV } from "../core/temporal-settings";
import { DEFAULT_LAUNCHED_IDLE_SECONDS } from "../environments/launchers/types";
import { WEBHOOK_ENV } from "../integrations/webhook-sender";
import { MCP_ENV } from "../mcp/policy";
import { DEFAULT_BREAKER_SETTINGS } from "../providers/circuit-breaker";
import { PROVIDER_ENV } from "../providers/settings";
import { S3_ENV } from "../store/s3-config";
import { DEFAULT_SNAPSHOT_MAX_BYTES } from "../store/workspace-snapshots";
import { TELEMETRY_ENV } from "../telemetry/settings";
import { DEFAULT_TENANT_BUDGET_RECHECK_MS } from "../tenants/budget-check";
import { DEFAULT_PROCESS_LIMITS } from "../tools/sandbox";
import { VAULT_ENV } from "../vault/settings";

export const MIB = 1024 ** 2;

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
const DEFAULT_WORKSPACE_IDLE_EVICT_SECONDS = 1800;

/** The worker's variables: its own, and those of the parts it runs (Temporal, S3, models, MCP, telemetry). */
export const WORKER_ENV = {
  ...TEMPORAL_ENV,
  ...S3_ENV,
  ...PROVIDER_ENV,
  ...MCP_ENV,
  ...TELEMETRY_ENV,
  ...VAULT_ENV,
  ...WEBHOOK_ENV,
  KEEL_WORKSPACE_ROOT: z
    .string()
    .optional()
    .describe(
      "Where the worker keeps the workspaces it holds (default .keel/workspaces in its working directory).",
    ),
  KEEL_WORKFLOW_BUNDLE: z
    .string()
    .optional()
    .describe(
      "A prebuilt workflow bundle (npx tsx infra/bundling/bundle-workflows.ts OUT.js, as the Dockerfile does); unset: bundled at start.",
    ),
  KEEL_WORKFLOW_BUNDLE_TRACED: z
    .string()
    .optional()
    .describe(
      "The same bundle with the tracing interceptors (bundle-workflows.ts --traced), loaded when telemetry is on.",
    ),
  KEEL_MAX_CONCURRENT_ACTIVITIES: z.coerce
    .number()
    .int()
    .positive()
    .default(200)
    .describe("Activities (model calls, tool calls, …) one worker runs at once."),
  KEEL_SHUTDOWN_GRACE_SECONDS: z.coerce
    .number()
    .nonnegative()
    .default(60)
    .describe("On SIGTERM, how long in-flight activities get to finish before they are cancelled."),
  KEEL_PROVIDER_BREAKER_FAILURES: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_BREAKER_SETTINGS.failures)
    .describe(
      'Failover-class errors in a row (rate limit, overload, 5xx, connection) that open the circuit breaker of a model at its provider endpoint in this worker (docs/providers.md, "Circuit breakers").',
    ),
  KEEL_PROVIDER_BREAKER_COOLDOWN_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_BREAKER_SETTINGS.cooldownMs)
    .describe(
      "How long an open circuit breaker keeps a run's calls away from its model at that endpoint before one probe call is let through, in milliseconds.",
    ),
  KEEL_OPENAI_STREAM: booleanFlag.optional().describe("Stream OpenAI-API responses (default true)."),
  KEEL_OPENAI_TIMEOUT_MS: milliseconds
    .optional()
    .describe("Timeout of one OpenAI-API request, in milliseconds."),
  KEEL_OPENAI_HEADERS: headersJson
    .optional()
    .describe('Extra headers of OpenAI-API requests, a JSON object (e.g. {"X-Title":"keel"}); never echoed.'),
  KEEL_ANTHROPIC_STREAM: booleanFlag.optional().describe("Stream Anthropic-API responses (default true)."),
  KEEL_ANTHROPIC_TIMEOUT_MS: milliseconds
    .optional()
    .describe("Timeout of one Anthropic-API request, in milliseconds."),
  KEEL_ANTHROPIC_HEADERS: headersJson
    .optional()
    .describe("Extra headers of Anthropic-API requests, a JSON object."),
  KEEL_ANTHROPIC_PROMPT_CACHING: booleanFlag
    .optional()
    .describe("Mark the prompt's stable prefix for Anthropic's prompt caching (default true)."),
  KEEL_SANDBOX: z
    .enum(["on", "off"])
    .default("on")
    .describe(
      '"off" runs tool processes unsandboxed (hosts without user namespaces; logged at every start); needs KEEL_SINGLE_TENANT or KEEL_WORKER_TOOLS=off.',
    ),
  KEEL_WORKER_TOOLS: z
    .enum(["on", "off"])
    .default("on")
    .describe(
      '"off": no tool call runs on the workers; runs must name a runner or launched environment (the API refuses others).',
    ),
  KEEL_SINGLE_TENANT: z
    .string()
    .refine(isValidId, "must be a valid tenant id")
    .optional()
    .describe("The one tenant this deployment serves (required with KEEL_SANDBOX=off); others are refused."),
  KEEL_LIVE_EVENTS: z
    .enum(["on", "off"])
    .default("on")
    .describe('"off" stops publishing live events (text deltas, tool output so far) to run streams.'),
  KEEL_LIVE_EVENTS_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(10)
    .max(10_000)
    .default(DEFAULT_LIVE_EVENT_OPTIONS.intervalMs)
    .describe(
      "Longest a live delta waits to be sent with others (each batch is one signal in the run's history).",
    ),
  KEEL_SANDBOX_PASS_ENV: z
    .string()
    .default("")
    .describe(
      "Comma-separated variables of the worker passed to tool commands (secret-looking names are refused).",
    ),
  KEEL_SANDBOX_NETWORK_FULL: z
    .string()
    .optional()
    .describe('Who may run tools with network "full": off (default), on, or comma-separated tenant ids.'),
  KEEL_SANDBOX_MEMORY_MB: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_PROCESS_LIMITS.memoryBytes / MIB)
    .describe("Memory of one tool call's processes, in MiB."),
  KEEL_SANDBOX_MAX_PROCESSES: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_PROCESS_LIMITS.processes)
    .describe("Processes one tool call may have at once."),
  KEEL_SANDBOX_CPU_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_PROCESS_LIMITS.cpuSeconds)
    .describe(
      "CPU seconds of one tool call (per process, and all its processes together where cgroups allow).",
    ),
  KEEL_SANDBOX_MAX_FILE_MB: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_PROCESS_LIMITS.fileSizeBytes / MIB)
    .describe("Largest file a tool call may write, in MiB."),
  KEEL_SANDBOX_TMP_MB: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_PROCESS_LIMITS.tmpBytes / MIB)
    .describe("Size of a tool call's /tmp, in MiB."),
  KEEL_WORKSPACE_MAX_MB: z.coerce
    .number()
    .int()
    .positive()
    .default((DEFAULT_PROCESS_LIMITS.workspaceBytes ?? 0) / MIB)
    .describe(
      'Bytes of files one workspace may hold, in MiB: the file tools refuse a write past it, and a tool command\'s files stop growing at it (docs/tools.md, "Workspace quota").',
    ),
  KEEL_SANDBOX_MAX_SECONDS: z.coerce
    .number()
    .positive()
    .default(DEFAULT_PROCESS_LIMITS.wallTimeMs / 1000)
    .describe("Longest one tool command may run, in seconds."),
  KEEL_WORKSPACE_IDLE_EVICT_SECONDS: z.coerce
    .number()
    .nonnegative()
    .default(DEFAULT_WORKSPACE_IDLE_EVICT_SECONDS)
    .describe(
      "Seconds a held workspace may stay unused before it leaves the local disk (only when identical to its snapshot); 0 = never.",
    ),
  KEEL_SNAPSHOT_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_SNAPSHOT_MAX_BYTES)
    .describe("Largest workspace (bytes of files) a snapshot records; a larger one fails the snapshot."),
  KEEL_GIT_HOSTS: z
    .string()
    .optional()
    .describe(
      "Comma-separated hosts git workspace sources may name (default: github.com, gitlab.com, bitbucket.org).",
    ),
  KEEL_TENANT_BUDGET_RECHECK_SECONDS: z.coerce
    .number()
    .positive()
    .default(DEFAULT_TENANT_BUDGET_RECHECK_MS / 1000)
    .describe("How often a run paused at its tenant's budget asks again whether it may go on."),
  KEEL_LAUNCHER: z
    .enum(["local", "fargate"])
    .optional()
    .describe(
      "Who starts the runners of launched environments: local (a process on the worker's machine) or fargate (an ECS task).",
    ),
  KEEL_LAUNCHER_FARGATE_CLUSTER: z
    .string()
    .min(1)
    .optional()
    .describe("KEEL_LAUNCHER=fargate: the cluster (name or ARN) the runner tasks run in."),
  KEEL_LAUNCHER_FARGATE_TASK_DEFINITION: z
    .string()
    .min(1)
    .optional()
    .describe("KEEL_LAUNCHER=fargate: the runner's task definition (family, family:revision or ARN)."),
  KEEL_LAUNCHER_FARGATE_CONTAINER: z
    .string()
    .min(1)
    .default("runner")
    .describe("KEEL_LAUNCHER=fargate: the runner container's name in it."),
  KEEL_LAUNCHER_FARGATE_SUBNETS: idList("subnet")
    .optional()
    .describe("KEEL_LAUNCHER=fargate: comma-separated subnet ids of the runner tasks."),
  KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS: idList("sg")
    .optional()
    .describe("KEEL_LAUNCHER=fargate: comma-separated security group ids of the runner tasks."),
  KEEL_LAUNCHER_FARGATE_ASSIGN_PUBLIC_IP: booleanFlag
    .default(false)
    .describe("KEEL_LAUNCHER=fargate: a public IP per task (public subnets without NAT)."),
  KEEL_LAUNCHER_API_URL: z
    .url()
    .optional()
    .describe("The API's URL as launched runners reach it (required with KEEL_LAUNCHER)."),
  KEEL_LAUNCHER_IDLE_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_LAUNCHED_IDLE_SECONDS)
    .describe("A launched runner with no call for this long stops."),
  KEEL_SLACK_BOT_TOKEN: z
    .string()
    .min(1)
    .optional()
    .describe(
      "The Slack bot token (secret, xoxb-…) runs started from Slack post their answers and pauses with.",
    ),
  KEEL_SLACK_API_URL: z
    .url()
    .optional()
    .describe("Base URL of Slack's Web API, ending in / (default Slack's own)."),
  KEEL_FAILPOINTS: z
    .string()
    .optional()
    .describe("Tests only: crash points (name or name@N, comma-separated) where the worker kills itself."),
} satisfies SettingsShape;

/** Every variable the worker's configuration reads. */
export const WORKER_SETTING_NAMES: readonly string[] = Object.keys(WORKER_ENV);
