/** Bodies and answers of the session-tree routes: fork, branch, label, compact. */

import { z } from "@hono/zod-openapi";

const MAX_ENTRY_ID_CHARS = 256;

export const ForkBodySchema = z
  .object({ entryId: z.string().min(1).max(MAX_ENTRY_ID_CHARS) })
  .openapi("ForkRequest");

export const BranchBodySchema = z
  .object({ entryId: z.string().min(1).max(MAX_ENTRY_ID_CHARS), summarize: z.boolean().default(false) })
  .openapi("BranchRequest");

const MAX_LABEL_CHARS = 200;

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
