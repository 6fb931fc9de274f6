/**
 * The MCP servers the integration tests run, none written here: the reference TypeScript servers
 * from node_modules and mcp-server-time from PyPI (installed by scripts/ensure-mcp-servers.mjs,
 * which `npm test` runs). Workers see their folders read-only (KEEL_MCP_MOUNTS).
 */
import { readFileSync, realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import type { McpStdioServer } from "../../src/mcp/types";

const projectRoot = resolve(__dirname, "../..");
const nodeModules = realpathSync(join(projectRoot, "node_modules"));
const pythonDir = realpathSync(join(projectRoot, ".keel/tools/mcp-python"));
const python = (JSON.parse(readFileSync(join(pythonDir, ".installed"), "utf8")) as { python: string }).python;

const everythingJs = join(nodeModules, "@modelcontextprotocol/server-everything/dist/index.js");
const filesystemJs = join(nodeModules, "@modelcontextprotocol/server-filesystem/dist/index.js");

/** Worker settings that let stdio servers find their programs inside the sandbox. */
export const MCP_WORKER_ENV = { KEEL_MCP_MOUNTS: `${nodeModules},${pythonDir}` };

/** `@modelcontextprotocol/server-everything` on stdio. */
export function everythingServer(overrides: Partial<McpStdioServer> = {}): McpStdioServer {
  return { name: "everything", command: "node", args: [everythingJs, "stdio"], ...overrides };
}

/** server-everything that exits after `seconds` (a server crashing mid-call). */
export function crashingEverythingServer(seconds: number): McpStdioServer {
  return {
    name: "everything",
    command: "timeout",
    args: ["-s", "KILL", String(seconds), "node", everythingJs, "stdio"],
  };
}

/** `@modelcontextprotocol/server-filesystem`, allowed the workspace only. */
export function filesystemServer(): McpStdioServer {
  return { name: "fs", command: "node", args: [filesystemJs, "/workspace"] };
}

/** `mcp-server-time` (Python, from PyPI). */
export function timeServer(): McpStdioServer {
  return { name: "time", command: python, args: ["-m", "mcp_server_time"], env: { PYTHONPATH: pythonDir } };
}
