/**
 * How MCP tools are named and classed for the model and the run: `<server>__<tool>`, and a replay
 * class from the server's own annotations unless the operator overrides it. Pure (runs in the
 * workflow too).
 */
import type { ToolSpec } from "../core/messages";
import type { ReplayClass } from "../tools/types";
import type { McpServerSettings, McpToolEntry, McpToolList, McpToolRef, McpToolsOfTurn } from "./types";

/** Between server and tool in a model-facing name; server names may not contain it. */
const MCP_SEPARATOR = "__";

/** Server names: lower-case letters, digits, `_` and `-`, no `__`. */
export const MCP_SERVER_NAME = /^(?!.*__)[a-z0-9][a-z0-9_-]{0,31}$/;

export function mcpToolName(server: string, tool: string): string {
  return `${server}${MCP_SEPARATOR}${tool}`;
}

/** Names the providers accept for a tool (OpenAI's rule, the strictest). */
const PROVIDER_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Whether a server's tool can be offered to the model: its model-facing name is one every provider accepts. */
export function offeredToModel(server: string, tool: string): boolean {
  return PROVIDER_TOOL_NAME.test(mcpToolName(server, tool));
}

/** The server and tool a model-facing name stands for, or undefined for a built-in name. */
export function splitMcpToolName(name: string): { server: string; tool: string } | undefined {
  const at = name.indexOf(MCP_SEPARATOR);
  if (at <= 0) return undefined;
  return { server: name.slice(0, at), tool: name.slice(at + MCP_SEPARATOR.length) };
}

/** A server's tool annotations (MCP `ToolAnnotations`), as far as replay is concerned. */
export interface ReplayHints {
  readOnlyHint?: boolean;
  idempotentHint?: boolean;
  destructiveHint?: boolean;
}

/**
 * The replay class a tool's annotations give: read-only → `safe` (repeated after a crash);
 * idempotent → `idempotent-with-check` (repeated: the server says a repeat has no further effect);
 * destructive or unknown → `unsafe` (never repeated blindly; the outcome is reported unknown).
 * An operator's override for the tool wins.
 */
export function replayClassOf(
  tool: string,
  hints: ReplayHints | undefined,
  overrides: McpServerSettings["replay"],
): ReplayClass {
  const override = overrides?.[tool];
  if (override) return override;
  if (hints?.readOnlyHint === true) return "safe";
  if (hints?.idempotentHint === true) return "idempotent-with-check";
  return "unsafe";
}

/** Tools the model may call, as provider specs, from the recorded list (unavailable servers add none). */
export function mcpToolSpecs(list: McpToolList | undefined): ToolSpec[] {
  return (list?.servers ?? []).flatMap((listing) =>
    listing.status === "ready"
      ? listing.tools.map((entry) => ({
          name: mcpToolName(listing.server, entry.tool),
          description: entry.description,
          parameters: entry.inputSchema,
        }))
      : [],
  );
}

/**
 * How an `llmTurn` input carries the run's MCP tools: by digest when every ready listing was
 * stored (the history then holds a server's tools once, in its listing), else the list itself
 * (listings recorded before they were stored, or whose store failed).
 */
export function mcpToolsForTurn(list: McpToolList | undefined): McpToolsOfTurn {
  if (!list) return {};
  const refs = list.servers.flatMap((listing) =>
    listing.status === "ready" ? [{ server: listing.server, digest: listing.digest }] : [],
  );
  if (refs.every((ref): ref is McpToolRef => ref.digest !== undefined)) return { mcpToolRefs: refs };
  return { mcpTools: list };
}

/** The recorded entry of a model-facing name, with its server's name, if the run listed it. */
export function findMcpTool(
  list: McpToolList | undefined,
  name: string,
): { server: string; entry: McpToolEntry } | undefined {
  const parts = splitMcpToolName(name);
  if (!parts) return undefined;
  const listing = list?.servers.find((candidate) => candidate.server === parts.server);
  if (listing?.status !== "ready") return undefined;
  const entry = listing.tools.find((candidate) => candidate.tool === parts.tool);
  return entry && { server: parts.server, entry };
}
