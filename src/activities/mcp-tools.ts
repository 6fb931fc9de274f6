/**
 * MCP activities: `listMcpTools` at a run's start (on the worker holding the session's workspace,
 * where its stdio servers run), and the MCP branch of `executeTool`. The list is the activity's
 * result, so it is in the run's history and carried across continue-as-new: replays and later
 * executions offer the model exactly the tools this listing found.
 */
import { realpath } from "node:fs/promises";
import { Context } from "@temporalio/activity";
import type { ListMcpToolsInput, LlmTurnInput, McpCallTarget } from "../contracts/activities";
import { type McpConnections, type McpSessionContext, messageOf } from "../mcp/connections";
import { callSessionTool, listSessionServers } from "../mcp/session-tools";
import type { McpServerListing, McpToolEntry, McpToolList } from "../mcp/types";
import type { SessionRef } from "../store/session-keys";
import { prepareWorkspace, type ToolOutput, type ToolUpdate, workspaceFor } from "../tools";
import type { NetworkPolicy } from "../tools/sandbox";
import type { ActivityDeps } from "./deps";
import { failpoint } from "./failpoints";
import { whileHeartbeating } from "./heartbeat";

export function listMcpToolsActivity(deps: ActivityDeps) {
  return async function listMcpTools(input: ListMcpToolsInput): Promise<McpToolList> {
    // A worker that runs no agent code starts no MCP server either (a run from before the switch).
    if (deps.workerTools === false)
      return {
        servers: input.servers.map((server) => ({
          server: server.name,
          status: "unavailable",
          error: "this deployment runs no tools on its workers (KEEL_WORKER_TOOLS=off)",
        })),
      };
    failpoint("listMcpTools.start");
    const ctx = Context.current();
    const connections = requireConnections(deps);
    const session = await sessionContext(deps, input, input.network);
    const listed = await whileHeartbeating(ctx, "listing", () =>
      listSessionServers(connections, session, input.servers),
    );
    const servers = await Promise.all(
      listed.map(async (listing): Promise<McpServerListing> => {
        if (listing.status !== "ready") return listing;
        const digest = await storeListing(deps, input, listing.tools);
        return { ...listing, ...(digest ? { digest } : {}) };
      }),
    );
    return { servers };
  };
}

/**
 * Stores a server's tools by digest for the run's model calls (McpToolListings); undefined when
 * this worker has no store or the write failed: the run then passes the list itself.
 */
async function storeListing(
  deps: ActivityDeps,
  ref: SessionRef,
  tools: McpToolEntry[],
): Promise<string | undefined> {
  try {
    return await deps.mcpListings?.put(ref, tools);
  } catch (error) {
    Context.current().log.warn("the MCP tool listing could not be stored; model calls carry it", {
      error: messageOf(error),
    });
    return undefined;
  }
}

/** The run's MCP tools for a model call: the list itself, or read by the digests of its listings. */
export async function mcpToolsOfTurn(
  deps: ActivityDeps,
  input: LlmTurnInput,
): Promise<McpToolList | undefined> {
  if (!input.mcpToolRefs) return input.mcpTools;
  const listings = deps.mcpListings;
  if (!listings) throw new Error("this worker has no MCP tool listing store configured");
  const servers = await Promise.all(
    input.mcpToolRefs.map(
      async ({ server, digest }): Promise<McpServerListing> => ({
        server,
        status: "ready",
        tools: await listings.get(input, digest),
      }),
    ),
  );
  return { servers };
}

/**
 * Runs one MCP call for `executeTool`: never throws for the server's sake (an unavailable server,
 * a timeout, a crash, an abort are error results). Progress notifications become `onUpdate` text.
 */
export async function runMcpCall(
  deps: ActivityDeps,
  ref: SessionRef,
  network: NetworkPolicy | undefined,
  target: McpCallTarget,
  args: Record<string, unknown>,
  signal: AbortSignal,
  onUpdate: (update: ToolUpdate) => void,
): Promise<ToolOutput> {
  const session = await sessionContext(deps, ref, network);
  return callSessionTool(requireConnections(deps), session, target, args, signal, onUpdate);
}

/**
 * The session's servers that announced a changed tool list since their last listing on this
 * worker (for `ExecuteToolResult.mcpToolsChanged`): the run lists them again before the model's
 * next turn.
 */
export function mcpToolsChangedFor(deps: ActivityDeps, ref: SessionRef): string[] {
  return deps.mcp?.changedServers({ sessionKey: sessionKeyOf(ref) }) ?? [];
}

/** Ends the session's MCP servers on this worker (its copy of the workspace was replaced). */
export async function closeMcpServersOf(deps: Pick<ActivityDeps, "mcp">, ref: SessionRef): Promise<void> {
  await deps.mcp?.closeSession(sessionKeyOf(ref));
}

function sessionKeyOf(ref: SessionRef): string {
  return `${ref.tenantId}/${ref.sessionId}`;
}

async function sessionContext(
  deps: ActivityDeps,
  ref: SessionRef,
  network: NetworkPolicy | undefined,
): Promise<McpSessionContext> {
  const workspace = workspaceFor(deps.workspaceRoot, ref.tenantId, ref.sessionId);
  await prepareWorkspace(workspace);
  const { vault } = deps;
  return {
    sessionKey: sessionKeyOf(ref),
    workspaceDir: await realpath(workspace.dir),
    sandbox: { ...deps.sandbox, network: network ?? "none", tenantId: ref.tenantId },
    // The tenant's secrets its servers name, read when a connection opens (names never cross tenants).
    ...(vault ? { secrets: (names: readonly string[]) => vault.resolve(ref.tenantId, names) } : {}),
  };
}

function requireConnections(deps: ActivityDeps): McpConnections {
  if (!deps.mcp) throw new Error("this worker has no MCP client configured");
  return deps.mcp;
}
