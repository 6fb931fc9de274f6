/**
 * The body of `POST …/messages`: the message and the settings of the run it starts (model, tools,
 * policy, workspace, limits, network, hooks), as this deployment allows them. The schema is built
 * per deployment (catalog, workspace and network policy), so the document states what the server
 * accepts.
 */

import { z } from "@hono/zod-openapi";
import { DELIVERY_MODES, POLICY_ACTIONS } from "../../contracts/runs";
import { compilesAsRegExp } from "../../core/patterns";
import type { McpPolicy } from "../../mcp/policy";
import { mcpServersSchema, secretNameSchema } from "../../mcp/schema";
import { MODEL_SPEC_APIS, modelFromSpec } from "../../providers/model-spec";
import { ModelUrlPolicy } from "../../providers/model-urls";
import { MAX_NETWORK_ALLOWLIST, parseAllowlist } from "../../tools/egress-proxy";
import {
  GIT_HOSTS_SETTING,
  type GitHosts,
  gitUrlRefusal,
  isLocalGitSource,
  parseGitHosts,
} from "../../tools/git-source";
import { MAX_TENANT_SECRETS } from "../../vault/types";
import { HOOK_SETS } from "../../workflows/hooks";
import { agentDefinitionsSchema, RUN_TOOL_NAMES } from "./agents";

const MAX_MESSAGE_TEXT_CHARS = 1_000_000;
const MAX_SYSTEM_PROMPT_CHARS = 200_000;
const MAX_POLICY_RULES = 100;
const MAX_PATTERN_CHARS = 1_000;
/** Longest approval wait a caller may ask for: one week. */
const MAX_APPROVAL_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;
const MIN_APPROVAL_TIMEOUT_MS = 1_000;

const PolicyActionSchema = z.enum(POLICY_ACTIONS);

const ToolPolicyRuleSchema = z.object({
  tool: z.string().min(1).max(128).openapi({ description: "Tool name, or * for every tool" }),
  argumentsPattern: z
    .string()
    .max(MAX_PATTERN_CHARS)
    .refine(compilesAsRegExp, "must be a valid regular expression")
    .optional()
    .openapi({ description: "Regular expression over the JSON arguments", format: "regex" }),
  action: PolicyActionSchema,
});

const ToolPolicySchema = z
  .object({
    rules: z.array(ToolPolicyRuleSchema).max(MAX_POLICY_RULES).default([]),
    default: PolicyActionSchema.optional(),
    approvalTimeoutMs: z.number().int().min(MIN_APPROVAL_TIMEOUT_MS).max(MAX_APPROVAL_TIMEOUT_MS).optional(),
  })
  .openapi("ToolPolicy");

/** What a message body may ask for, as this deployment allows it (the document says the same). */
export interface MessageBodyOptions {
  /** Model ids of the catalog; `model` must be one of them. */
  modelIds: readonly string[];
  /** `directory` sources and local git clones read the worker's disk: off unless configured. */
  allowDirectoryWorkspaces: boolean;
  /** Where one-line models may send requests; default: their family's vendor API only. */
  modelUrls?: ModelUrlPolicy;
  /** Hosts git sources may name (KEEL_GIT_HOSTS); default DEFAULT_GIT_HOSTS. */
  gitHosts?: GitHosts;
  /** Network "full" is offered to some tenant (KEEL_SANDBOX_NETWORK_FULL is not off); default false. */
  fullNetworkOffered?: boolean;
  /** Internal hosts runs' MCP servers may name (KEEL_MCP_HOSTS). */
  mcp?: McpPolicy;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The git URLs a deployment accepts, as one pattern: https on a listed host (any host name with
 * `*`; a host listed without a port on any port), no credentials, query or fragment; and, where
 * directory workspaces are allowed, an absolute path or a file:// URL.
 */
function gitUrlPattern(allowDirectoryWorkspaces: boolean, hosts: GitHosts): RegExp {
  const listed = [...hosts.listed].map((entry) =>
    /:\d+$/.test(entry) && !entry.endsWith("]") ? escapeRegExp(entry) : `${escapeRegExp(entry)}(:\\d{1,5})?`,
  );
  const anyHost = "[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\\d{1,5})?";
  const host = hosts.anyPublic ? [anyHost, ...listed] : listed;
  const remote = host.length > 0 ? `https://(${host.join("|")})(/[^\\s?#@]*)?` : undefined;
  const local = allowDirectoryWorkspaces ? "(/|file://)[^\\s]*" : undefined;
  const forms = [remote, local].filter((form) => form !== undefined);
  // Nothing is accepted: a pattern that matches nothing.
  return new RegExp(forms.length > 0 ? `^(${forms.join("|")})$` : "^(?!)$");
}

/**
 * Workspace sources: `empty`, `git` from an https URL on an allowed host, and with worker-disk
 * access `directory` and local git paths (absolute, or file://).
 */
function workspaceSourceSchema(allowDirectoryWorkspaces: boolean, gitHosts = parseGitHosts(undefined)) {
  // A leading '-' would read as an option to git: refused by pattern, so the document says so too.
  const url = z
    .string()
    .min(1)
    .max(2_048)
    // The document states the accepted form (so a client, or a fuzzer, knows it); the refinement
    // applies the same policy the worker does.
    .regex(gitUrlPattern(allowDirectoryWorkspaces, gitHosts), "must be an https:// URL on an allowed host")
    .superRefine((value, ctx) => {
      if (allowDirectoryWorkspaces && isLocalGitSource(value)) return;
      const refusal = gitUrlRefusal(value, gitHosts);
      if (refusal) ctx.addIssue({ code: "custom", message: refusal });
    })
    .openapi({
      description: `An https:// URL on a host the deployment allows (${GIT_HOSTS_SETTING})${
        allowDirectoryWorkspaces ? ", or an absolute path / file:// URL on the worker machine" : ""
      }`,
    });
  const git = z.object({
    type: z.literal("git"),
    url,
    ref: z
      .string()
      .min(1)
      .max(256)
      .regex(/^[A-Za-z0-9._/][A-Za-z0-9._/-]*$/, "a branch or tag name, not starting with '-'")
      .optional(),
  });
  const empty = z.object({ type: z.literal("empty") });
  const directory = z.object({
    type: z.literal("directory"),
    path: z
      .string()
      .min(1)
      .max(4_096)
      // A regex, not `startsWith`: the document states a regex as its `pattern`, a `startsWith` not at all.
      .regex(/^\//, "must be an absolute path on the worker machine")
      .openapi({ description: "An absolute path on the worker machine" }),
  });
  const variants = allowDirectoryWorkspaces ? ([empty, directory, git] as const) : ([empty, git] as const);
  return z.discriminatedUnion("type", [...variants]).openapi("WorkspaceSource");
}

/** Largest turn / tool-call limit a caller may set. */
const MAX_RUN_LIMIT = 100_000;
/** Largest token budget a caller may set (a run's or a raise). */
export const MAX_TOKEN_BUDGET = 1_000_000_000_000;
/** Longest pause a caller may ask for: 30 days. */
const MAX_PAUSE_TIMEOUT_SECONDS = 30 * 24 * 60 * 60;

export const RunLimitsSchema = z
  .object({
    maxTurns: z.number().int().min(1).max(MAX_RUN_LIMIT).optional(),
    maxToolCalls: z.number().int().min(0).max(MAX_RUN_LIMIT).optional(),
    maxCostUsd: z.number().min(0).max(1_000_000).optional().openapi({
      description:
        "Pause the run at the next turn boundary once its cost reaches this many US dollars (0 = no budget); see `POST /v1/sessions/{sessionId}/budget`",
    }),
    maxTokens: z.number().int().min(0).max(MAX_TOKEN_BUDGET).optional().openapi({
      description:
        "Pause the run at the next turn boundary once it has used this many tokens, input and output (0 = no budget)",
    }),
    pauseTimeoutSeconds: z.number().int().min(1).max(MAX_PAUSE_TIMEOUT_SECONDS).optional().openapi({
      description:
        "How long a run paused at a budget waits for a raise or a resume before it ends as completed (default 86400: one day)",
    }),
  })
  .openapi("RunLimits");

/**
 * An allowlist entry as `parseAllowlist` accepts it, for the document: a lower-case DNS name of two
 * labels or more whose last label starts with a letter, an optional `*.` prefix and `:port`.
 */
const LABEL = "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?";
const PORT = "(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})";
const ALLOWLIST_ENTRY_PATTERN = new RegExp(
  `^(\\*\\.)?(${LABEL}\\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?(:${PORT})?$`,
);

/**
 * Network access of the processes tools start. `"full"` is in the document only where the
 * deployment offers it to some tenant (KEEL_SANDBOX_NETWORK_FULL); a tenant it is not offered to
 * gets 403 `network-not-allowed`.
 */
function networkPolicySchema(fullOffered: boolean) {
  const modes = fullOffered ? (["none", "full"] as const) : (["none"] as const);
  return z
    .union(
      [
        z.enum(modes),
        z
          .object({
            allow: z
              .array(z.string().min(1).max(260).regex(ALLOWLIST_ENTRY_PATTERN, "must be a host name"))
              .min(1)
              .max(MAX_NETWORK_ALLOWLIST)
              .superRefine((entries, context) => {
                try {
                  parseAllowlist(entries);
                } catch (error) {
                  context.addIssue({ code: "custom", message: (error as Error).message });
                }
              }),
          })
          .strict(),
      ],
      {
        error: () =>
          `network must be ${modes.map((mode) => `"${mode}"`).join(", ")} or {"allow": ["host.example.com", "*.example.org", "host:8443"]}${fullOffered ? "" : ' ("full" is not offered on this deployment: the operator enables it with KEEL_SANDBOX_NETWORK_FULL)'}`,
      },
    )
    .openapi("NetworkPolicy", {
      description: `Network access of the processes tools start: "none" (default)${fullOffered ? '; "full" (the worker\'s own network: only for tenants the operator enabled with KEEL_SANDBOX_NETWORK_FULL; others get 403)' : ""}; or {"allow": [host names]}: HTTP(S) through an egress proxy to those names only (\`*.example.com\` for subdomains, \`:port\` for other ports than 80 and 443), never to an address that is loopback, private or link-local, whatever the name resolves to.`,
    });
}

const DeliveryModeSchema = z.enum(DELIVERY_MODES);

/**
 * One-line models as one pattern: each kind, a model name, and optionally a base URL at or below
 * one the deployment allows for that kind's API (path segments of unreserved characters only, so
 * no `..` or percent-encoding can climb out of the allowed path).
 */
function oneLinePattern(modelUrls: ModelUrlPolicy): RegExp {
  const segments = "(/[A-Za-z0-9_~-]+)*/?";
  const forms = Object.entries(MODEL_SPEC_APIS).map(([kind, api]) => {
    const bases = modelUrls.baseUrls(api).map((base) => {
      const url = new URL(base);
      const origin = escapeRegExp(`${url.protocol}//${url.host}`);
      const path = url.pathname.replace(/\/+$/, "");
      // An OpenAI base URL without a path means /v1 (sdkBaseUrl): the bare origin is that too.
      if (api !== "anthropic-messages" && path === "/v1") return `${origin}(/v1${segments}|/?)`;
      return `${origin}${escapeRegExp(path)}${segments}`;
    });
    const at = bases.length > 0 ? `(@(${bases.join("|")}))?` : "";
    return `${escapeRegExp(kind)}:[^\\s@]+${at}`;
  });
  return new RegExp(`^(${forms.join("|")})$`);
}

/** Models a run may name in order of preference (`model: [first, fallback, …]`). */
const MAX_RUN_MODELS = 5;

/**
 * One model a run may name on this deployment: a catalog id, or a one-line model whose base URL
 * the operator allows (what `POST …/messages` and an eval's `models` take).
 */
export function runModelSchema(options: MessageBodyOptions) {
  const [firstModel, ...otherModels] = options.modelIds;
  // A model named in one line (`openai-compatible:<model>@<base URL>`, see providers/model-spec).
  const unknownModel = (input: unknown) =>
    `Unknown model ${JSON.stringify(input)}: not in the model catalog (${options.modelIds.join(", ") || "empty"}) and not a one-line model (openai-compatible:<model>@<base URL>)`;
  const modelUrls = options.modelUrls ?? new ModelUrlPolicy({ allowlist: [], configured: {} });
  /** Why a model is refused: its base URL, when that is what the operator does not allow. */
  const refusal = (input: unknown) => {
    const spec = typeof input === "string" ? modelFromSpec(input) : undefined;
    const route = spec ? modelUrls.route(spec) : undefined;
    return route?.kind === "refused" ? route.message : unknownModel(input);
  };
  const oneLine = z
    .string()
    .max(512)
    // The document states the form and the base URLs this deployment allows (the worker checks
    // the URL again); the refinement applies the provider's own parser.
    .regex(oneLinePattern(modelUrls), { error: (issue) => refusal(issue.input) })
    .refine((spec) => modelFromSpec(spec) !== undefined, { error: (issue) => unknownModel(issue.input) });
  const model: z.ZodType<string> =
    firstModel === undefined
      ? z
          .string()
          .min(1)
          .max(256)
          .superRefine((id, ctx) => {
            const message = modelFromSpec(id) ? refusal(id) : undefined;
            if (message !== undefined && message !== unknownModel(id))
              ctx.addIssue({ code: "custom", message });
          })
      : z.union([z.enum([firstModel, ...otherModels]), oneLine], { error: (issue) => refusal(issue.input) });
  return model;
}

/** The body of `POST …/messages` for a deployment's catalog and workspace policy. */
export function messageBodySchema(options: MessageBodyOptions) {
  const model = runModelSchema(options);
  return z
    .object({
      text: z.string().min(1).max(MAX_MESSAGE_TEXT_CHARS),
      delivery: DeliveryModeSchema.default("auto"),
      model: z
        .union([model, z.array(model).min(1).max(MAX_RUN_MODELS)])
        .optional()
        .openapi({
          description: `Model id from the catalog, or a model named in one line: openai-compatible:<model>@<base URL> (also openai-responses:, anthropic-compatible:); the base URL must be one the operator allows (its configured base URLs, the catalog's, KEEL_MODEL_URLS). A list (at most ${MAX_RUN_MODELS}) names the models in order of preference: a turn whose call fails in a way retrying will not fix soon (rate limit, overload, 5xx, an outage) is taken by the next (docs/providers.md, "Failover").`,
        }),
      systemPrompt: z.string().max(MAX_SYSTEM_PROMPT_CHARS).optional(),
      tools: z.array(z.enum(RUN_TOOL_NAMES)).max(RUN_TOOL_NAMES.length).optional(),
      agents: agentDefinitionsSchema(model).optional(),
      policy: ToolPolicySchema.optional(),
      workspace: workspaceSourceSchema(options.allowDirectoryWorkspaces, options.gitHosts).optional(),
      limits: RunLimitsSchema.optional(),
      network: networkPolicySchema(options.fullNetworkOffered ?? false).optional(),
      secrets: z.array(secretNameSchema()).max(MAX_TENANT_SECRETS).optional().openapi({
        description:
          "Names of the tenant's secrets (PUT /v1/secrets/{name}) the run's tool processes may use: inside the sandbox each is an environment variable holding a placeholder, which the egress proxy replaces with the value only on HTTPS requests to the hosts the secret is bound to (those hosts join the run's network allowlist). 400 for a name the tenant does not have, with network \"full\", or where the deployment has no vault.",
      }),
      environment: z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/)
        .optional()
        .openapi({
          description:
            "Where the run's tools run: \"worker\" (default: the worker holding the workspace) or one of the tenant's environments (POST /v1/environments), whose `keel runner` processes take the calls",
        }),
      environmentWaitSeconds: z.number().int().min(1).max(86_400).optional().openapi({
        description:
          "How long a tool call waits for a runner of the environment before it gets an error result (default 600)",
      }),
      hooks: z
        .array(z.enum(Object.keys(HOOK_SETS) as [string, ...string[]]))
        .max(Object.keys(HOOK_SETS).length)
        .optional()
        .openapi({ description: "Built-in hook sets applied to the run, in order (docs/architecture.md)" }),
      mcpServers: mcpServersSchema(options.mcp).optional(),
    })
    .openapi("MessageRequest", {
      description:
        "model, systemPrompt, tools, agents, policy, workspace, limits, network, secrets and hooks apply when the message starts a run; a message delivered to a live run leaves that run's settings unchanged.",
    });
}

export type MessageBody = z.infer<ReturnType<typeof messageBodySchema>>;
