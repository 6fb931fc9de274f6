/**
 * `/mcp`: Keel as an MCP server over streamable HTTP (docs/integrations.md, "MCP server"), built
 * with the official SDK's web-standard transport, so the one Hono app serves it on Node and on
 * Lambda alike.
 *
 * Stateless: every request builds its own server and transport and holds nothing after it has
 * answered (no `Mcp-Session-Id`, answers as JSON rather than an SSE stream). Any API process —
 * another Lambda execution environment, a restarted server — answers any request, and nothing
 * lives longer than API Gateway's request; what must last (runs, sessions) is Keel's own durable
 * state, reached through the tools. GET (a server-initiated stream) and DELETE (ending a session)
 * have no meaning without a session: 405, as the transport answers them in stateless mode.
 *
 * The bearer auth of every route runs before this (app.ts), so a request without a key never
 * reaches the SDK. The tools call the API's routes in process with the request's own
 * Authorization header (mcp-tools.ts).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Context } from "hono";
import { type ApiCall, registerKeelTools } from "./mcp-tools";
import type { ApiEnv } from "./router";
import { type MessageBodyOptions, messageBodySchema } from "./schemas";

export const MCP_PATH = "/mcp";
const SERVER_INFO = { name: "keel", version: "0.1.0" };
const INSTRUCTIONS =
  "Keel runs coding agents durably. start_task starts one (a new session, or an existing idle one) and answers at once; wait_for_run follows it (call again while it answers running); get_diff and get_transcript read what it did; send_message steers a live run; answer_approval decides tool calls waiting for approval.";

/** What the endpoint needs of the app: its own fetch entry, and the message body's deployment options. */
export interface McpEndpointDeps {
  fetch: (request: Request) => Response | Promise<Response>;
  bodyOptions: MessageBodyOptions;
}

/** The handler of `/mcp` (all methods): one stateless MCP exchange per request. */
export function mcpEndpoint(deps: McpEndpointDeps) {
  const messageBody = messageBodySchema(deps.bodyOptions);
  return async (c: Context<ApiEnv>): Promise<Response> => {
    const authorization = c.req.header("authorization") ?? "";
    const origin = new URL(c.req.url).origin;
    const call: ApiCall = (method, path, options = {}) =>
      Promise.resolve(
        deps.fetch(
          new Request(new URL(path, origin), {
            method,
            headers: {
              ...options.headers,
              authorization,
              ...(options.json !== undefined ? { "content-type": "application/json" } : {}),
            },
            ...(options.json !== undefined ? { body: JSON.stringify(options.json) } : {}),
          }),
        ),
      );
    const server = new McpServer(SERVER_INFO, { instructions: INSTRUCTIONS });
    registerKeelTools(server, call, messageBody);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    try {
      return await transport.handleRequest(c.req.raw);
    } finally {
      await server.close();
    }
  };
}
