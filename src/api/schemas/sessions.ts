/** What the session routes answer: a session's view, the session list, entry pages, created and deleted sessions. */

import { z } from "@hono/zod-openapi";
import { UsageSchema as CoreUsageSchema } from "../../core/messages";
import { SessionHeaderSchema } from "../../core/session-types";
import type { MaintenanceKind } from "../../run-client/session-runs";
import { RunBudgetSchema, RunPauseSchema } from "./budget";
import { RunErrorSchema, RunViewStatusSchema } from "./runs";

/** A run's token counts and cost: the core's own shape (`core/messages.ts`), as the run reports it. */
const UsageSchema = CoreUsageSchema.meta({ id: "Usage" });

const PendingToolCallSchema = z.object({
  toolCallId: z.string(),
  name: z.string(),
  state: z.string(),
  argumentsPreview: z.string(),
  ranOn: z.string().optional().openapi({
    description:
      "Where the call runs: `worker`, a runner environment's name, `mcp:<server>` (`mcp:<server>@<env>` on a runner), or `sub-agent`",
  }),
});

const RunWaitSchema = z
  .object({
    type: z.literal("waiting"),
    on: z.enum(["environment", "worker"]),
    environment: z.string().optional(),
    message: z.string().openapi({ description: 'What a person reads, starting with "waiting for"' }),
    attempt: z.number().int(),
    staleUpTo: z.number().int().optional().openapi({
      description:
        "Set when a tool call's runner or worker stopped answering: its live output of attempts up to this one, read later, is old",
    }),
    since: z.number().openapi({ description: "Since when (epoch ms)" }),
  })
  .openapi("RunWait");

export const SessionStatusSchema = z.enum(["idle", "running", "waiting_approval", "paused"]);

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
        pause: RunPauseSchema.optional().openapi({
          description: "Set while the run is paused at a budget: why, and until when it waits",
        }),
        budget: RunBudgetSchema.optional(),
        waiting: RunWaitSchema.optional().openapi({
          description:
            "What a live run waits for outside itself (a runner of its environment, a worker), from Temporal's description of it; absent when its work is under way",
        }),
        previousRunId: z.string().optional().openapi({
          description:
            "The run this one continues (continue-as-new): a long run's next execution, or the run that reads messages handed over at a run's end",
        }),
      })
      .optional(),
    maintenance: z
      .object({
        kind: z.enum({ branch: "branch", compact: "compact", label: "label" } satisfies {
          [K in MaintenanceKind]: K;
        }),
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

export const EntriesPageSchema = z
  .object({
    entries: z.array(z.object({ seq: z.number().int(), entry: z.record(z.string(), z.unknown()) })),
    nextAfter: z.number().int().optional().openapi({ description: "Present when more entries follow" }),
  })
  .openapi("EntriesPage");

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

/**
 * An `application/json` import of a one-line pi file, its header alone, for the document: the
 * core's header schema (the import reads the body with it; a version below 2 is migrated as 1).
 */
const { $schema: _dialect, ...piHeader } = z.toJSONSchema(SessionHeaderSchema, { io: "input" });
export const PI_HEADER_JSON_SCHEMA = {
  ...piHeader,
  title: "A one-line pi session file (its header)",
  // zod's JSON Schema type and the document's schema type describe the same JSON differently
  // (`$defs`, `$ref`); this one is an object schema.
} as unknown as { type: "object" };
