/**
 * Request and response schemas of the HTTP API. The same zod schemas validate requests and
 * generate the OpenAPI document (`GET /v1/openapi.json`).
 */

import { z } from "@hono/zod-openapi";
import { ID_PATTERN } from "../store/session-keys";
import { builtinTools } from "../tools/index";
import { HOOK_SETS } from "../workflows/hooks";

export const MAX_MESSAGE_TEXT_CHARS = 1_000_000;
export const MAX_SYSTEM_PROMPT_CHARS = 200_000;
export const MAX_POLICY_RULES = 100;
export const MAX_PATTERN_CHARS = 1_000;
export const MAX_ENTRY_ID_CHARS = 256;
export const MAX_TOOL_CALL_ID_CHARS = 256;
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

export const SessionIdSchema = z
  .string()
  .regex(ID_PATTERN, "session ids match ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
  .openapi({ param: { name: "sessionId", in: "path" }, example: "session-1" });

export const SessionParamsSchema = z.object({ sessionId: SessionIdSchema });

export const ApprovalParamsSchema = z.object({
  sessionId: SessionIdSchema,
  toolCallId: z
    .string()
    .min(1)
    .max(MAX_TOOL_CALL_ID_CHARS)
    .openapi({ param: { name: "toolCallId", in: "path" } }),
});

const nonNegativeIntegerText = z
  .string()
  .regex(/^\d{1,15}$/, "a non-negative integer")
  .transform(Number);

const limitText = nonNegativeIntegerText.pipe(z.number().int().min(1).max(MAX_PAGE_LIMIT));

export const ListQuerySchema = z.object({
  limit: limitText.optional().openapi({ param: { name: "limit", in: "query" }, type: "integer" }),
  cursor: z
    .string()
    .min(1)
    .max(2_048)
    .optional()
    .openapi({ param: { name: "cursor", in: "query" } }),
});

export const EventsQuerySchema = z.object({
  after: nonNegativeIntegerText
    .optional()
    .openapi({ param: { name: "after", in: "query" }, type: "integer", description: "Last seq seen" }),
});

export const EntriesQuerySchema = z.object({
  after: nonNegativeIntegerText.optional().openapi({
    param: { name: "after", in: "query" },
    type: "integer",
    description: "Entries with a sequence number greater than this; omit to start at the first entry",
  }),
  limit: limitText.optional().openapi({ param: { name: "limit", in: "query" }, type: "integer" }),
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
    .openapi({ description: "Regular expression over the JSON arguments" }),
  action: PolicyActionSchema,
});

export const ToolPolicySchema = z
  .object({
    rules: z.array(ToolPolicyRuleSchema).max(MAX_POLICY_RULES).default([]),
    default: PolicyActionSchema.optional(),
    approvalTimeoutMs: z.number().int().min(MIN_APPROVAL_TIMEOUT_MS).max(MAX_APPROVAL_TIMEOUT_MS).optional(),
  })
  .openapi("ToolPolicy");

const notAnOption = (value: string) => !value.startsWith("-");

export const WorkspaceSourceSchema = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("empty") }),
    z.object({
      type: z.literal("directory"),
      path: z.string().min(1).max(4_096).openapi({ description: "A path on the worker machine" }),
    }),
    z.object({
      type: z.literal("git"),
      url: z.string().min(1).max(2_048).refine(notAnOption, "must not start with '-'"),
      ref: z
        .string()
        .min(1)
        .max(256)
        .regex(/^[A-Za-z0-9._/-]+$/, "a branch or tag name")
        .refine(notAnOption, "must not start with '-'")
        .optional(),
    }),
  ])
  .openapi("WorkspaceSource");

export const NetworkPolicySchema = z
  .union([
    z.enum(["none", "full"]),
    z.object({
      allow: z
        .array(
          z
            .string()
            .min(1)
            .max(253)
            .regex(/^[A-Za-z0-9.*-]+$/, "a host name"),
        )
        .min(1)
        .max(100),
    }),
  ])
  .openapi("NetworkPolicy", {
    description:
      'Network access of the processes tools start: "none" (default), "full", or {allow: [hosts]} (refused: this deployment has no egress proxy to enforce an allowlist).',
  });

export const DeliveryModeSchema = z.enum(["auto", "steer", "followUp", "interrupt", "reject"]);

export const MessageBodySchema = z
  .object({
    text: z.string().min(1).max(MAX_MESSAGE_TEXT_CHARS),
    delivery: DeliveryModeSchema.default("auto"),
    model: z.string().min(1).max(256).optional().openapi({ description: "Model id from the catalog" }),
    systemPrompt: z.string().max(MAX_SYSTEM_PROMPT_CHARS).optional(),
    tools: z.array(z.enum(builtinToolNames)).max(builtinToolNames.length).optional(),
    policy: ToolPolicySchema.optional(),
    workspace: WorkspaceSourceSchema.optional(),
    network: NetworkPolicySchema.optional(),
    hooks: z
      .array(z.enum(Object.keys(HOOK_SETS) as [string, ...string[]]))
      .max(Object.keys(HOOK_SETS).length)
      .optional()
      .openapi({ description: "Built-in hook sets applied to the run, in order (docs/architecture.md)" }),
  })
  .openapi("MessageRequest", {
    description:
      "model, systemPrompt, tools, policy, workspace, network and hooks apply when the message starts a run; a message delivered to a live run leaves that run's settings unchanged.",
  });

export const DeliveredSchema = z
  .object({
    sessionId: z.string(),
    runId: z.string(),
    workflowId: z.string(),
    delivery: z.enum(["started", "steered", "queued", "interrupted"]),
    queueLength: z.number().int(),
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

export const SessionViewSchema = z
  .object({
    sessionId: z.string(),
    status: SessionStatusSchema,
    run: z
      .object({
        runId: z.string(),
        status: z.string().openapi({ description: "The run's own status (completed, aborted, …)" }),
        turn: z.number().int(),
        usage: UsageSchema,
        cost: z.number().openapi({ description: "US dollars" }),
        pendingToolCalls: z.array(PendingToolCallSchema),
        endReason: z.string().optional(),
      })
      .optional(),
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
        parentSession: z.string().optional(),
      }),
    ),
    nextCursor: z.string().optional(),
  })
  .openapi("SessionList");

export const AbortBodySchema = z.object({ reason: z.string().max(1_000).optional() }).openapi("AbortRequest");

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
    warnings: z.array(z.string()).optional(),
  })
  .openapi("CreatedSession");

export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: "https://keel.dev/problems/session-not-found" }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
  })
  .passthrough()
  .openapi("Problem");
