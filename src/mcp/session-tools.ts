/**
 * A session's MCP servers, listed and called wherever its tools run: the worker holding its
 * workspace (activities/mcp-tools.ts) or the runner of its environment (runner/runner.ts). Never
 * throws for a server's sake: a server that cannot be reached is an unavailable listing, and a
 * call to it an error result.
 */
import type { ToolOutput, ToolUpdate } from "../tools/types";
import { callServerTool, DEFAULT_MCP_TIMEOUT_MS, listServerTools } from "./calls";
import { type McpConnections, type McpSessionContext, messageOf } from "./connections";
import type { McpServerListing, McpServerSettings } from "./types";

/** Each server's tools (without digests: where they are stored is the caller's business), or why it is unavailable. */
export function listSessionServers(
  connections: McpConnections,
  session: McpSessionContext,
  servers: McpServerSettings[],
): Promise<McpServerListing[]> {
  return Promise.all(
    servers.map(async (server): Promise<McpServerListing> => {
      try {
        const tools = await connections.with(session, server, async (client) => {
          const listed = await listServerTools(client, server);
          connections.markListed(session, server);
          return listed;
        });
        return { server: server.name, status: "ready", tools };
      } catch (error) {
        return { server: server.name, status: "unavailable", error: messageOf(error).slice(0, 1_000) };
      }
    }),
  );
}

/** Calls `tool` on `server` for the session; progress notifications become `onUpdate` text. */
export async function callSessionTool(
  connections: McpConnections,
  session: McpSessionContext,
  target: { server: McpServerSettings; tool: string },
  args: Record<string, unknown>,
  signal: AbortSignal,
  onUpdate: (update: ToolUpdate) => void,
): Promise<ToolOutput> {
  const { server, tool } = target;
  try {
    return await connections.with(session, server, (client) =>
      callServerTool(client, tool, args, {
        signal,
        timeoutMs: server.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS,
        onProgress: ({ progress, total, message }) =>
          onUpdate({
            content: [
              {
                type: "text",
                text: `progress ${progress}${total !== undefined ? `/${total}` : ""}${message ? `: ${message}` : ""}`,
              },
            ],
          }),
      }),
    );
  } catch (error) {
    return {
      content: [{ type: "text", text: messageOf(error) }],
      isError: true,
      details: { serverUnavailable: true },
    };
  }
}
