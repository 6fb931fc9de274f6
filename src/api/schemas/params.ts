/** Path and query parameters of the HTTP API: session and tool-call ids, paging, event reads. */

import { z } from "@hono/zod-openapi";
import { ID_PATTERN } from "../../core/ids";
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from "../../store/session-store";

const MAX_TOOL_CALL_ID_CHARS = 256;
/**
 * Tool-call ids as providers make them (`call_…`, `toolu_…`, Responses `call_…|fc_…`): no `/`,
 * no leading `.`, so an id never reads as a path.
 */
const TOOL_CALL_ID_PATTERN = new RegExp(`^[A-Za-z0-9_][A-Za-z0-9_.:|-]{0,${MAX_TOOL_CALL_ID_CHARS - 1}}$`);
/** Page size of a list without `limit`, and the largest one may ask for: the store's own bounds. */
export const DEFAULT_PAGE_LIMIT = DEFAULT_LIST_LIMIT;
const MAX_PAGE_LIMIT = MAX_LIST_LIMIT;

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
  children: z
    .enum(["true", "false"])
    .optional()
    .openapi({
      param: { name: "children", in: "query" },
      description:
        "Event stream only: `true` adds the numbered events of the run's sub-agents, as SSE events named `child` with `child: {sessionId, toolCallId}`; default false",
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
  format: z
    .enum(["jsonl", "html"])
    .optional()
    .openapi({
      param: { name: "format", in: "query" },
      description: "html: the session viewer as one offline HTML file (default jsonl)",
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
