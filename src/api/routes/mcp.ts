/** `GET /v1/sessions/{id}/mcp-tools`: the MCP tools the session's latest run recorded at its start. */
import { createRoute, z } from "@hono/zod-openapi";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import { SessionParamsSchema } from "../schemas";
import { problemResponses, refOf, requireSession } from "./common";

const McpToolsSchema = z
  .object({
    servers: z.array(
      z.object({
        server: z.string(),
        status: z.enum(["ready", "unavailable"]),
        error: z.string().optional(),
        tools: z
          .array(
            z.object({
              name: z.string().openapi({ description: "The name the model calls: <server>__<tool>" }),
              description: z.string(),
              replay: z.enum(["safe", "idempotent-with-check", "unsafe"]),
            }),
          )
          .optional(),
      }),
    ),
  })
  .openapi("McpTools");

const getMcpTools = createRoute({
  method: "get",
  path: "/v1/sessions/{sessionId}/mcp-tools",
  summary: "The MCP servers of the session's latest run and the tools it listed (what the model was offered)",
  request: { params: SessionParamsSchema },
  responses: {
    200: { description: "The recorded list", content: { "application/json": { schema: McpToolsSchema } } },
    ...problemResponses(),
  },
});

export function mcpRoutes(deps: RouteContext) {
  return createRouter().openapi(getMcpTools, async (c) => {
    const { sessionId } = c.req.valid("param");
    const ref = refOf(c, sessionId);
    await requireSession(deps, ref);
    const list = await (await deps.runs()).mcpTools(ref);
    const servers = (list?.servers ?? []).map((listing) =>
      listing.status === "ready"
        ? {
            server: listing.server,
            status: listing.status,
            tools: listing.tools.map((entry) => ({
              name: `${listing.server}__${entry.tool}`,
              description: entry.description,
              replay: entry.replay,
            })),
          }
        : { server: listing.server, status: listing.status, error: listing.error },
    );
    return c.json({ servers }, 200);
  });
}
