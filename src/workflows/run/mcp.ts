/**
 * The run's MCP servers: their tools are listed once, at the run's start, where the session's
 * tools run (the worker holding its workspace, or a runner of its environment: stdio servers
 * start there), and the list is kept in the run's state and
 * carried across continue-as-new, so every model call and every replay sees the same tools. A
 * server that cannot be listed is reported (`mcp_server_unavailable`) and offers no tools; the
 * run goes on. A server that announces a changed list (`notifications/tools/list_changed`) during
 * a batch of calls is listed again after the batch (`mcp_tools_changed`): the new list replaces
 * its old one in the run's state, and the model sees it from the next turn.
 */
import type { ExecuteToolInput } from "../../contracts/activities";
import { unclaimedText } from "../../contracts/unclaimed";
import { findMcpTool, mcpToolName } from "../../mcp/tool-names";
import type { McpServerSettings, McpToolList } from "../../mcp/types";
import { PATCHES, takesPatch } from "../patches";
import { DEFAULT_ENVIRONMENT_WAIT_MS, mcpListingActivities } from "./activity-options";
import type { RunContext } from "./context";
import { cancellable, stoppedBy } from "./lifecycle";
import { onRunner } from "./runner-calls";
import { emit, type RunRecord } from "./state";
import { runnerEnvironment } from "./views";
import { onWorkspaceWorker } from "./workspace-claim";

/** Lists the run's MCP servers' tools unless an earlier execution of the run did. */
export async function listMcpServers(ctx: RunContext): Promise<void> {
  const { run } = ctx;
  const servers = run.settings.mcpServers ?? [];
  if (servers.length === 0 || run.mcpTools) return;
  const list = await listUnlessAborted(ctx, servers, "list");
  // Aborted: the turn loop ends the run; a later run lists again.
  if (!list) return;
  run.mcpTools = list;
  reportUnavailable(run, list);
}

/**
 * Lists again the servers whose calls in the batch just run reported a changed tool list, and
 * replaces their listings in the run's state (an unavailable server then offers no tools).
 */
export async function relistChangedMcpServers(ctx: RunContext): Promise<void> {
  const changed = ctx.mcpToolsChanged;
  ctx.mcpToolsChanged = undefined;
  const { run } = ctx;
  if (!changed || !run.mcpTools || !takesPatch(PATCHES.mcpToolsRelisted, ctx.runVersion)) return;
  const servers = (run.settings.mcpServers ?? []).filter((server) => changed.has(server.name));
  if (servers.length === 0) return;
  const list = await listUnlessAborted(ctx, servers, "list again");
  if (!list) return;
  run.mcpTools = {
    servers: run.mcpTools.servers.map(
      (listing) => list.servers.find((fresh) => fresh.server === listing.server) ?? listing,
    ),
  };
  reportUnavailable(run, list);
  for (const listing of list.servers) {
    if (listing.status === "ready")
      emit(run, {
        type: "mcp_tools_changed",
        server: listing.server,
        tools: listing.tools.map((entry) => mcpToolName(listing.server, entry.tool)),
      });
  }
}

/**
 * Lists the servers' tools; undefined when an abort stopped the listing (a listing waiting for a
 * runner may wait for the run's whole `environmentWaitMs`). An interrupt (a steering message) does
 * not concern the listing: it is asked for again.
 */
async function listUnlessAborted(
  ctx: RunContext,
  servers: McpServerSettings[],
  verb: string,
): Promise<McpToolList | undefined> {
  if (!takesPatch(PATCHES.mcpListingCancellable, ctx.runVersion)) return listTools(ctx, servers, verb);
  for (;;) {
    try {
      return await cancellable(ctx, () => listTools(ctx, servers, verb));
    } catch (error) {
      if (stoppedBy(ctx.run, error) === "abort") return undefined;
    }
  }
}

/** Lists on the runner of the run's environment, else on the worker holding the workspace. */
async function listTools(ctx: RunContext, servers: McpServerSettings[], verb: string): Promise<McpToolList> {
  const { run } = ctx;
  const input = {
    ...run.ref,
    servers,
    ...(run.settings.network !== undefined ? { network: run.settings.network } : {}),
  };
  const summary = `${verb} MCP tools: ${servers.map((server) => server.name).join(", ")}`;
  const environment = runnerEnvironment(run);
  if (environment !== undefined) {
    const waitMs = run.settings.timeouts.environmentWaitMs ?? DEFAULT_ENVIRONMENT_WAIT_MS;
    return onRunner(ctx, environment, {
      schedule: (activities) =>
        activities.listMcpToolsOnRunner.executeWithOptions({ summary: `${summary} @ ${environment}` }, [
          { ...input, environment, waitMs },
        ]),
      unclaimed: async (why) => {
        const error = unclaimedText(environment, why, waitMs, "listing");
        return { servers: servers.map((server) => ({ server: server.name, status: "unavailable", error })) };
      },
    });
  }
  // The worker holding the workspace may be gone (killed while it listed): the listing follows the
  // workspace. Runs recorded before it did failed there.
  return onWorkspaceWorker(
    ctx,
    (queue) =>
      mcpListingActivities(queue, run.settings.timeouts).listMcpTools.executeWithOptions({ summary }, [
        input,
      ]),
    () => takesPatch(PATCHES.mcpListingMovesWorkspace, ctx.runVersion),
  );
}

function reportUnavailable(run: RunRecord, list: McpToolList): void {
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
