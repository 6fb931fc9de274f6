/**
 * MCP tool servers as run settings, and the tool list a run records: plain data, shared by the
 * API, the workflow and the worker (no runtime imports: the workflow bundle takes this file).
 */
import type { ReplayClass } from "../tools/types";

/** A value sent to a server: literal text, or the name of one of the tenant's secrets (docs/tools.md, "Secrets"). */
export type McpValue = string | { secret: string };

/** Replay classes an operator may give a tool by name, overriding its annotations. */
type McpReplayOverrides = Record<string, ReplayClass>;

interface McpServerCommon {
  /** `[a-z0-9_-]`, at most 32 characters, no `__` (the separator of the model-facing names). */
  name: string;
  /** Longest wait for one call's answer (default 60 s); the call then ends with an error result. */
  timeoutMs?: number;
  /** Replay class per tool name, instead of the one its annotations give. */
  replay?: McpReplayOverrides;
}

/** A server the worker starts as a process inside the session's sandbox, speaking MCP on stdio. */
export interface McpStdioServer extends McpServerCommon {
  command: string;
  args?: string[];
  /** Environment of the process; a `{secret}` gets the secret's placeholder (its egress proxy injects the value). */
  env?: Record<string, McpValue>;
}

/** A Streamable HTTP server reached through the worker's egress policy. */
export interface McpHttpServer extends McpServerCommon {
  url: string;
  /** Request headers; a `{secret}` gets the value host-side, only toward a host the secret is bound to. */
  headers?: Record<string, McpValue>;
}

export type McpServerSettings = McpStdioServer | McpHttpServer;

export function isHttpServer(server: McpServerSettings): server is McpHttpServer {
  return "url" in server;
}

/** The tenant secrets the servers name as `{secret: NAME}`, each once. */
export function secretNamesOf(servers: readonly McpServerSettings[]): string[] {
  const names = servers.flatMap((server) =>
    Object.values((isHttpServer(server) ? server.headers : server.env) ?? {}).flatMap((value) =>
      typeof value === "object" ? [value.secret] : [],
    ),
  );
  return [...new Set(names)];
}

/** One tool of a server as the model sees it, with the replay class the run applies. */
export interface McpToolEntry {
  /** The tool's own name on its server. */
  tool: string;
  description: string;
  /** The tool's input JSON Schema, as the server gave it. */
  inputSchema: Record<string, unknown>;
  replay: ReplayClass;
}

/** What listing one server found: its tools, or why it is unavailable. */
export type McpServerListing =
  | {
      server: string;
      status: "ready";
      tools: McpToolEntry[];
      /** Where the worker stored `tools` (store/mcp-tool-listings.ts): model calls pass this instead. */
      digest?: string;
    }
  | { server: string; status: "unavailable"; error: string };

/** The run's recorded tool list: listed once at the run's start, carried across continue-as-new. */
export interface McpToolList {
  servers: McpServerListing[];
}

/** A server's stored listing, named by digest (an `llmTurn` input carries these instead of the tools). */
export interface McpToolRef {
  server: string;
  digest: string;
}

/** How a model call's input carries the run's MCP tools: the list itself, or refs to stored listings. */
export interface McpToolsOfTurn {
  mcpTools?: McpToolList;
  mcpToolRefs?: McpToolRef[];
}
