/** Bodies and answers of the routes that talk to a session's run: messages, abort, approvals, events. */

import { z } from "@hono/zod-openapi";
import {
  ABORT_REASON_PATTERN,
  APPROVAL_DECISIONS,
  DELIVERY_OUTCOMES,
  MAX_ABORT_REASON_CHARS,
  RUN_STATUSES,
} from "../../contracts/runs";
import type { ClosedByFailure } from "../../run-client/session-runs";

export const DeliveredSchema = z
  .object({
    sessionId: z.string(),
    runId: z.string(),
    workflowId: z.string(),
    delivery: z.enum([...DELIVERY_OUTCOMES, "pending"]).openapi({
      description:
        "How the run took the message; `pending`: the session's run is live but no worker answered within 2 s (all down or redeploying). The message is recorded; the run takes it when a worker picks it up, or refuses it if by then it has ended or its queue is full.",
    }),
    queueLength: z.number().int().optional().openapi({
      description: "Messages waiting in the queue the message went to, itself included; absent when pending.",
    }),
    handedOver: z.literal(true).optional().openapi({
      description:
        "The run had decided to end: the session's next run (continue-as-new) reads the message. `runId` names that run when it started within the answer wait, else the ending run; the session's `run.previousRunId` then names the ending run.",
    }),
  })
  .openapi("Delivered");

export const RunErrorSchema = z
  .object({
    type: z.string().openapi({
      description: "The failure's type or error class (e.g. NonRetryableLlmError, TerminatedFailure)",
    }),
    message: z.string(),
  })
  .openapi("RunError");

/** How Temporal closes a workflow that did not end by itself, beside the run's own `failed`. */
const CLOSED_BY_TEMPORAL = [
  "terminated",
  "timed_out",
  "canceled",
] as const satisfies readonly ClosedByFailure[];

/** A run's status in the API: its own, or how its workflow closed (routes/sessions.ts assigns both). */
const RUN_VIEW_STATUSES = [...RUN_STATUSES, ...CLOSED_BY_TEMPORAL] as const;

export const RunViewStatusSchema = z.enum(RUN_VIEW_STATUSES).openapi({
  description:
    "The run's own status, or how Temporal closed its workflow when it did not end by itself (failed, terminated, timed_out, canceled)",
});

/** How a run ended: its status and, for a workflow closed by failure, the error. */
const RunEndSchema = z
  .object({ status: RunViewStatusSchema, error: RunErrorSchema.optional() })
  .openapi("RunEnd");

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
    decision: z.enum(APPROVAL_DECISIONS),
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
