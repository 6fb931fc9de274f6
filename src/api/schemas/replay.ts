/** Body and answer of `POST /v1/sessions/{sessionId}/replay`: forks of a session that each run a message again. */

import { z } from "@hono/zod-openapi";
import { DELIVERY_OUTCOMES } from "../../contracts/runs";
import { type MessageBodyOptions, messageBodySchema } from "./message-body";

/** Replays one request may start. */
const MAX_REPLAYS = 20;
const MAX_ENTRY_ID_CHARS = 256;

/** The body: where to replay from, how often, what to send, and the runs' settings (a message's). */
export function replayBodySchema(options: MessageBodyOptions) {
  const message = messageBodySchema(options);
  return z
    .object({
      fromEntryId: z.string().min(1).max(MAX_ENTRY_ID_CHARS).openapi({
        description:
          "A user message: each fork ends at its parent and is sent its text again. Any other entry: each fork ends at it and is sent `message`, else the first user message after it on the path to the session's leaf",
      }),
      times: z
        .number()
        .int()
        .min(1)
        .max(MAX_REPLAYS)
        .default(1)
        .openapi({
          description: `How many forks, each with its own run (1 to ${MAX_REPLAYS})`,
        }),
      message: message.shape.text.optional().openapi({ description: "The message each run starts with" }),
      settings: message.omit({ text: true, delivery: true }).optional().openapi("ReplaySettings", {
        description:
          "The settings each run starts with, as a message takes them (model, systemPrompt, tools, agents, policy, limits, …); the origin's runs' settings are not copied",
      }),
    })
    .openapi("ReplayRequest");
}

export const ReplayResultSchema = z
  .object({
    origin: z.object({ sessionId: z.string(), entryId: z.string() }).openapi({
      description:
        "The session and entry replayed from (each fork's header names the session as `parentSession`)",
    }),
    question: z.string().openapi({ description: "The message each run was sent" }),
    runs: z.array(
      z.object({
        sessionId: z.string().openapi({ description: "The fork" }),
        outcome: z.enum([...DELIVERY_OUTCOMES, "pending", "quota-exceeded", "refused"]).openapi({
          description:
            "`started` (or `pending`: no worker answered within 2 s) as a message's `delivery`; `quota-exceeded` or `refused`: the fork was made and no run started (`detail` says why), and no more forks are made",
        }),
        runId: z.string().optional(),
        workflowId: z.string().optional(),
        detail: z.string().optional(),
      }),
    ),
  })
  .openapi("ReplayResult");
