/**
 * Request and response schemas of the HTTP API. The same zod schemas validate requests and
 * generate the OpenAPI document (`GET /v1/openapi.json`).
 */

import { z } from "@hono/zod-openapi";
import type { McpPolicy } from "../mcp/policy";
import { mcpServersSchema } from "../mcp/schema";
import { MODEL_SPEC_APIS, modelFromSpec } from "../providers/model-spec";
import { ModelUrlPolicy } from "../providers/model-urls";
import { ID_PATTERN } from "../store/session-keys";
import { MAX_NETWORK_ALLOWLIST, parseAllowlist } from "../tools/egress-proxy";
import {
  GIT_HOSTS_SETTING,
  type GitHosts,
  gitUrlRefusal,
  isLocalGitSource,
  parseGitHosts,
} from "../tools/git-source";
import { builtinTools } from "../tools/index";
import { HOOK_SETS } from "../workflows/hooks";
import { ABORT_REASON_PATTERN, MAX_ABORT_REASON_CHARS } from "../workflows/types";

export const MAX_MESSAGE_TEXT_CHARS = 1_000_000;
export const MAX_SYSTEM_PROMPT_CHARS = 200_000;
export const MAX_POLICY_RULES = 100;
export const MAX_PATTERN_CHARS = 1_000;
export const MAX_ENTRY_ID_CHARS = 256;
export const MAX_TOOL_CALL_ID_CHARS = 256;
/**
 * Tool-call ids as providers make them (`call_…`, `toolu_…`, Responses `call_…|fc_…`): no `/`,
 * no leading `.`, so an id never reads as a path.
 */
export const TOOL_CALL_ID_PATTERN = new RegExp(
  `^[A-Za-z0-9_][A-Za-z0-9_.:|-]{0,${MAX_TOOL_CALL_ID_CHARS - 1}}$`,
);
export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1_000;
/** Longest approval wait a caller may ask for: one week. */
export const MAX_APPROVAL_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;
export const MIN_APPROVAL_TIMEOUT_MS = 1_000;

const builtinToolNames = builtinTools.map((tool) => tool.name) as [string, ...string[]];

function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}

// ---- Path and query parameters

/**
 * Session ids in paths: the store's id pattern, except the words the routes use at that place
 * (`POST /v1/sessions/import`), so a path never means two things.
 */
const RESERVED_SESSION_IDS = ["import"];
export const API_SESSION_ID_PATTERN = new RegExp(
  `^(?!(?:${RESERVED_SESSION_IDS.join("|")})$)${ID_PATTERN.source.slice(1)}`,
);

export const SessionIdSchema = z
  .string()
  .regex(
    API_SESSION_ID_PATTERN,
    `session ids match ${ID_PATTERN.source} and are not ${RESERVED_SESSION_IDS.join(", ")}`,
  )
  .openapi({ param: { name: "sessionId", in: "path" }, example: "session-1" });

export const SessionParamsSchema = z.object({ sessionId: SessionIdSchema });

export const ApprovalParamsSchema = z.object({
  sessionId: SessionIdSchema,
  toolCallId: z
    .string()
    .regex(TOOL_CALL_ID_PATTERN, "tool-call ids are letters, digits and _ - . : | (not starting with . or -)")
    .openapi({ param: { name: "toolCallId", in: "path" }, example: "call_abc123" }),
});

/** Query integers are decimal digits, at most 15 of them (exact in a double). */
const MAX_QUERY_INTEGER = 999_999_999_999_999;

const nonNegativeIntegerText = z
  .string()
  .regex(/^\d{1,15}$/, "a non-negative integer")
  .transform(Number);

const limitText = nonNegativeIntegerText.pipe(z.number().int().min(1).max(MAX_PAGE_LIMIT));

/** How a query integer appears in the document: what the text check above accepts. */
const queryInteger = (minimum: number, maximum: number) => ({ type: "integer" as const, minimum, maximum });

const limitParam = {
  param: { name: "limit", in: "query" as const },
  ...queryInteger(1, MAX_PAGE_LIMIT),
  description: `Page size, 1-${MAX_PAGE_LIMIT} (default ${DEFAULT_PAGE_LIMIT})`,
};

export const ListQuerySchema = z.object({
  limit: limitText.optional().openapi(limitParam),
  cursor: z
    .string()
    .min(1)
    .max(2_048)
    .optional()
    .openapi({ param: { name: "cursor", in: "query" } }),
});

export const EventsQuerySchema = z.object({
  after: nonNegativeIntegerText.optional().openapi({
    param: { name: "after", in: "query" },
    ...queryInteger(0, MAX_QUERY_INTEGER),
    description: "Last seq seen",
  }),
  deltas: z
    .enum(["true", "false"])
    .optional()
    .openapi({
      param: { name: "deltas", in: "query" },
      description:
        "Event stream only: `false` leaves out live events (message_update, tool_execution_update); default true",
    }),
});

export const ExportQuerySchema = z.object({
  workspace: z
    .enum(["true", "false"])
    .optional()
    .openapi({
      param: { name: "workspace", in: "query" },
      description: "true: a .tar.gz of the session file and the workspace at the leaf",
    }),
});

export const EntriesQuerySchema = z.object({
  after: nonNegativeIntegerText.optional().openapi({
    param: { name: "after", in: "query" },
    ...queryInteger(0, MAX_QUERY_INTEGER),
    description: "Entries with a sequence number greater than this; omit to start at the first entry",
  }),
  limit: limitText.optional().openapi(limitParam),
});

// ---- Run settings in a message body

export const PolicyActionSchema = z.enum(["allow", "deny", "ask"]);

export const ToolPolicyRuleSchema = z.object({
  tool: z.string().min(1).max(128).openapi({ description: "Tool name, or * for every tool" }),
  argumentsPattern: z
    .string()
    .max(MAX_PATTERN_CHARS)
    .refine(compiles, "must be a valid regular expression")
    .optional()
    .openapi({ description: "Regular expression over the JSON arguments", format: "regex" }),
  action: PolicyActionSchema,
});

export const ToolPolicySchema = z
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
  /** Secrets and internal hosts runs' MCP servers may name (KEEL_MCP_SECRETS, KEEL_MCP_HOSTS). */
  mcp?: McpPolicy;
}

/**
 * Workspace sources: `empty`, `git` from an https URL on an allowed host, and with worker-disk
 * access `directory` and local git paths (absolute, or file://).
 */
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

export function workspaceSourceSchema(
  allowDirectoryWorkspaces: boolean,
  gitHosts = parseGitHosts(undefined),
) {
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
      .startsWith("/", "must be an absolute path on the worker machine")
      .openapi({ description: "An absolute path on the worker machine" }),
  });
  const variants = allowDirectoryWorkspaces ? ([empty, directory, git] as const) : ([empty, git] as const);
  return z.discriminatedUnion("type", [...variants]).openapi("WorkspaceSource");
}

/** Largest turn / tool-call limit a caller may set. */
export const MAX_RUN_LIMIT = 100_000;

export const RunLimitsSchema = z
  .object({
    maxTurns: z.number().int().min(1).max(MAX_RUN_LIMIT).optional(),
    maxToolCalls: z.number().int().min(0).max(MAX_RUN_LIMIT).optional(),
    maxCostUsd: z
      .number()
      .min(0)
      .max(1_000_000)
      .optional()
      .openapi({ description: "Stop once the run's cost reaches this many US dollars (0 = no budget)" }),
  })
  .openapi("RunLimits");

/**
 * Network access of the processes tools start: none, the worker's own network (where the operator
 * enabled it), or a list of host names reached through the call's egress proxy (tools/egress-proxy).
 */
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
export function networkPolicySchema(fullOffered: boolean) {
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

export const DeliveryModeSchema = z.enum(["auto", "steer", "followUp", "interrupt", "reject"]);

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

/** The body of `POST …/messages` for a deployment's catalog and workspace policy. */
export function messageBodySchema(options: MessageBodyOptions) {
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
  const model =
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
  return z
    .object({
      text: z.string().min(1).max(MAX_MESSAGE_TEXT_CHARS),
      delivery: DeliveryModeSchema.default("auto"),
      model: model.optional().openapi({
        description:
          "Model id from the catalog, or a model named in one line: openai-compatible:<model>@<base URL> (also openai-responses:, anthropic-compatible:); the base URL must be one the operator allows (its configured base URLs, the catalog's, KEEL_MODEL_URLS)",
      }),
      systemPrompt: z.string().max(MAX_SYSTEM_PROMPT_CHARS).optional(),
      tools: z.array(z.enum(builtinToolNames)).max(builtinToolNames.length).optional(),
      policy: ToolPolicySchema.optional(),
      workspace: workspaceSourceSchema(options.allowDirectoryWorkspaces, options.gitHosts).optional(),
      limits: RunLimitsSchema.optional(),
      network: networkPolicySchema(options.fullNetworkOffered ?? false).optional(),
      hooks: z
        .array(z.enum(Object.keys(HOOK_SETS) as [string, ...string[]]))
        .max(Object.keys(HOOK_SETS).length)
        .optional()
        .openapi({ description: "Built-in hook sets applied to the run, in order (docs/architecture.md)" }),
      mcpServers: mcpServersSchema(options.mcp).optional(),
    })
    .openapi("MessageRequest", {
      description:
        "model, systemPrompt, tools, policy, workspace, limits, network and hooks apply when the message starts a run; a message delivered to a live run leaves that run's settings unchanged.",
    });
}

export type MessageBody = z.infer<ReturnType<typeof messageBodySchema>>;

export const DeliveredSchema = z
  .object({
    sessionId: z.string(),
    runId: z.string(),
    workflowId: z.string(),
    delivery: z.enum(["started", "steered", "queued", "interrupted", "pending"]).openapi({
      description:
        "How the run took the message; `pending`: the session's run is live but no worker answered within 2 s (all down or redeploying). The message is recorded; the run takes it when a worker picks it up, or refuses it if by then it has ended or its queue is full.",
    }),
    queueLength: z.number().int().optional().openapi({
      description: "Messages waiting in the queue the message went to, itself included; absent when pending.",
    }),
  })
  .openapi("Delivered");

// ---- Sessions

export const UsageSchema = z
  .object({
    input: z.number(),
    output: z.number(),
    cacheRead: z.number(),
    cacheWrite: z.number(),
    totalTokens: z.number(),
    cost: z.object({
      input: z.number(),
      output: z.number(),
      cacheRead: z.number(),
      cacheWrite: z.number(),
      total: z.number(),
    }),
  })
  .openapi("Usage");

export const PendingToolCallSchema = z.object({
  toolCallId: z.string(),
  name: z.string(),
  state: z.string(),
  argumentsPreview: z.string(),
});

export const SessionStatusSchema = z.enum(["idle", "running", "waiting_approval"]);

export const RunErrorSchema = z
  .object({
    type: z.string().openapi({
      description: "The failure's type or error class (e.g. NonRetryableLlmError, TerminatedFailure)",
    }),
    message: z.string(),
  })
  .openapi("RunError");

export const RUN_VIEW_STATUSES = [
  "starting",
  "running",
  "waiting_approval",
  "completed",
  "aborted",
  "failed",
  "terminated",
  "timed_out",
  "canceled",
] as const;

export const RunViewStatusSchema = z.enum(RUN_VIEW_STATUSES).openapi({
  description:
    "The run's own status, or how Temporal closed its workflow when it did not end by itself (failed, terminated, timed_out, canceled)",
});

/** How a run ended: its status and, for a workflow closed by failure, the error. */
export const RunEndSchema = z
  .object({ status: RunViewStatusSchema, error: RunErrorSchema.optional() })
  .openapi("RunEnd");

export const SessionViewSchema = z
  .object({
    sessionId: z.string(),
    status: SessionStatusSchema,
    run: z
      .object({
        runId: z.string(),
        status: RunViewStatusSchema,
        error: RunErrorSchema.optional().openapi({ description: "Why the workflow closed, when it failed" }),
        turn: z
          .number()
          .int()
          .optional()
          .openapi({ description: "Absent when a failed run's state cannot be read" }),
        usage: UsageSchema.optional(),
        cost: z.number().optional().openapi({ description: "US dollars" }),
        pendingToolCalls: z.array(PendingToolCallSchema),
        endReason: z.string().optional(),
      })
      .optional(),
    maintenance: z
      .object({
        kind: z.enum(["branch", "compact", "label"]),
        status: z
          .string()
          .openapi({ description: "Temporal's status of the task: running, completed, failed, …" }),
      })
      .optional()
      .openapi({ description: "The maintenance task that ran after the latest run, when one did" }),
    entryCount: z.number().int(),
    leafId: z.string().nullable(),
    parentSession: z.string().optional(),
    createdAt: z.string().optional(),
  })
  .openapi("Session");

export const SessionListSchema = z
  .object({
    sessions: z.array(
      z.object({
        sessionId: z.string(),
        createdAt: z.string().optional(),
        lastActivityAt: z
          .string()
          .optional()
          .openapi({ description: "When the session's newest entry (or header) was stored" }),
        parentSession: z.string().optional(),
      }),
    ),
    nextCursor: z.string().optional(),
  })
  .openapi("SessionList");

export const AbortBodySchema = z
  .object({
    reason: z
      .string()
      .max(MAX_ABORT_REASON_CHARS)
      .regex(new RegExp(ABORT_REASON_PATTERN), "must contain a character other than whitespace")
      .optional()
      .openapi({ description: "Why the run is stopped (not blank); default `aborted through the API`" }),
  })
  .openapi("AbortRequest");

const QueuedMessageSchema = z
  .object({
    text: z.string(),
    acceptedAt: z.number().int().openapi({ description: "When the run accepted it (epoch ms)" }),
  })
  .openapi("QueuedMessage");

export const AbortedSchema = z
  .object({
    accepted: z.literal(true),
    runId: z.string(),
    answered: z.boolean().openapi({
      description:
        "true: the run answered, with `reason` and `unprocessed`. false: no worker answered in time; the abort was recorded and the run's `agent_end` event names the unprocessed messages",
    }),
    reason: z
      .string()
      .optional()
      .openapi({ description: "The reason the run ends with (the first abort's)" }),
    unprocessed: z.array(QueuedMessageSchema).optional().openapi({
      description: "Messages the run had queued and will end without reading, oldest first",
    }),
  })
  .openapi("Aborted");

export const ApprovalBodySchema = z
  .object({
    decision: z.enum(["approve", "reject"]),
    args: z.record(z.string(), z.unknown()).optional().openapi({ description: "Edited arguments" }),
    reason: z.string().max(1_000).optional(),
  })
  .openapi("ApprovalRequest");

export const AcceptedSchema = z.object({ accepted: z.literal(true) }).openapi("Accepted");

export const EventsPageSchema = z
  .object({
    events: z.array(z.object({ seq: z.number().int(), type: z.string() }).passthrough()),
    lastSeq: z.number().int().openapi({ description: "Pass as `after` to continue" }),
    runEnded: z.boolean(),
    run: RunEndSchema.optional().openapi({ description: "How the run ended; present once it has" }),
  })
  .openapi("EventsPage");

export const EntriesPageSchema = z
  .object({
    entries: z.array(z.object({ seq: z.number().int(), entry: z.record(z.string(), z.unknown()) })),
    nextAfter: z.number().int().optional().openapi({ description: "Present when more entries follow" }),
  })
  .openapi("EntriesPage");

export const ForkBodySchema = z
  .object({ entryId: z.string().min(1).max(MAX_ENTRY_ID_CHARS) })
  .openapi("ForkRequest");

export const BranchBodySchema = z
  .object({ entryId: z.string().min(1).max(MAX_ENTRY_ID_CHARS), summarize: z.boolean().default(false) })
  .openapi("BranchRequest");

export const MAX_LABEL_CHARS = 200;

export const LabelBodySchema = z
  .object({
    entryId: z.string().min(1).max(MAX_ENTRY_ID_CHARS),
    label: z
      .string()
      .min(1)
      .max(MAX_LABEL_CHARS)
      .optional()
      .openapi({ description: "The label; omit it to clear the entry's label" }),
  })
  .openapi("LabelRequest");

export const LabelResultSchema = z
  .object({
    sessionId: z.string(),
    entryId: z.string().openapi({ description: "The label entry written (the session's new leaf)" }),
    targetId: z.string(),
    label: z.string().optional(),
  })
  .openapi("LabelResult");

export const CompactBodySchema = z
  .object({ instructions: z.string().max(10_000).optional() })
  .openapi("CompactRequest");

export const BranchResultSchema = z
  .object({
    sessionId: z.string(),
    leafId: z.string().openapi({ description: "The marker or branch summary entry: the session's new leaf" }),
    summarized: z.boolean(),
  })
  .openapi("BranchResult");

export const CompactResultSchema = z
  .object({
    sessionId: z.string(),
    compacted: z.boolean(),
    reason: z.string(),
    tokensBefore: z.number().int(),
    entryId: z.string().optional().openapi({ description: "The compaction entry, when one was written" }),
  })
  .openapi("CompactResult");

export const CreatedSessionSchema = z
  .object({
    sessionId: z.string(),
    entryCount: z.number().int(),
    leafId: z.string().nullable(),
    parentSession: z.string().optional(),
    /** An imported archive's workspace, recorded as the workspace of the leaf. */
    workspace: z.object({ files: z.number().int(), bytes: z.number().int() }).optional(),
    warnings: z.array(z.string()).optional(),
  })
  .openapi("CreatedSession");

export const DeletedSessionSchema = z
  .object({
    sessionId: z.string(),
    /** Objects removed from S3: header, entries, chunks, markers and workspace snapshots. */
    deletedObjects: z.number().int(),
  })
  .openapi("DeletedSession");

export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: "https://keel.dev/problems/session-not-found" }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
  })
  .passthrough()
  .openapi("Problem");
