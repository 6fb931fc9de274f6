/**
 * The run's MCP servers: their tools are listed once, at the run's start, on the worker holding
 * the session's workspace (where stdio servers run), and the list is kept in the run's state and
 * carried across continue-as-new, so every model call and every replay sees the same tools. A
 * server that cannot be listed is reported (`mcp_server_unavailable`) and offers no tools; the
 * run goes on.
 */
import type { ExecuteToolInput } from "../../activities/types";
import { findMcpTool } from "../../mcp/tool-names";
import { mcpListingActivities } from "./activity-options";
import type { RunContext } from "./context";
import { emit, type RunRecord } from "./state";
import { workspaceTaskQueue } from "./tool-calls";

/** Lists the run's MCP servers' tools unless an earlier execution of the run did. */
export async function listMcpServers(ctx: RunContext): Promise<void> {
  const { run } = ctx;
  const servers = run.settings.mcpServers ?? [];
  if (servers.length === 0 || run.mcpTools) return;
  const queue = await workspaceTaskQueue(ctx);
  const list = await mcpListingActivities(queue, run.settings.timeouts).listMcpTools.executeWithOptions(
    { summary: `list MCP tools: ${servers.map((server) => server.name).join(", ")}` },
    [
      {
        ...run.ref,
        servers,
        ...(run.settings.network !== undefined ? { network: run.settings.network } : {}),
      },
    ],
  );
  run.mcpTools = list;
  for (const listing of list.servers) {
    if (listing.status === "unavailable")
      emit(run, { type: "mcp_server_unavailable", server: listing.server, error: listing.error });
  }
}

/** What `executeTool` needs to call the MCP tool `name`, or undefined for a built-in (or unlisted) name. */
export function mcpTarget(run: RunRecord, name: string): ExecuteToolInput["mcp"] {
  const found = findMcpTool(run.mcpTools, name);
  const server = found && run.settings.mcpServers?.find((candidate) => candidate.name === found.server);
  if (!found || !server) return undefined;
  return { server, tool: found.entry.tool, replay: found.entry.replay };
}
