/** The problem+json document every error answer is (RFC 9457; slugs in ../problems.ts). */

import { z } from "@hono/zod-openapi";

export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: "https://keel.dev/problems/session-not-found" }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
  })
  .passthrough()
  .openapi("Problem");
