/**
 * The MCP servers the integration tests run, none written here but one (`changingServer`): the
 * reference TypeScript servers from node_modules and mcp-server-time from PyPI (installed by scripts/ensure-mcp-servers.mjs,
 * which `npm test` runs). Workers see their folders read-only (KEEL_MCP_MOUNTS).
 */
import { spawn } from "node:child_process";
import { readFileSync, realpathSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
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

/**
 * A tiny server built on the SDK here, because none of the servers above changes its tool list
 * on request: `enable-extra` registers the tool `extra`, and the SDK's McpServer then sends
 * `notifications/tools/list_changed`.
 */
export function changingServer(): McpStdioServer {
  const sdk = join(nodeModules, "@modelcontextprotocol/sdk/dist/esm/server");
  const source = `
    import { McpServer } from ${JSON.stringify(join(sdk, "mcp.js"))};
    import { StdioServerTransport } from ${JSON.stringify(join(sdk, "stdio.js"))};
    const server = new McpServer({ name: "changing", version: "1.0.0" });
    server.registerTool("enable-extra", { description: "Adds the tool extra" }, async () => {
      server.registerTool("extra", { description: "Added at runtime" }, async () => ({
        content: [{ type: "text", text: "extra answered" }],
      }));
      return { content: [{ type: "text", text: "extra enabled" }] };
    });
    await server.connect(new StdioServerTransport());
  `;
  return { name: "changing", command: "node", args: ["--input-type=module", "-e", source] };
}

/** server-everything as a Streamable HTTP server on a free loopback port (a process of the test, outside any sandbox). */
export async function startEverythingHttp(): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await new Promise<number>((found, failed) => {
    const probe = createServer();
    probe.once("error", failed);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address() as AddressInfo;
      probe.close(() => found(address.port));
    });
  });
  const child = spawn(process.execPath, [everythingJs, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  await new Promise<void>((ready, failed) => {
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes("listening on port")) ready();
    });
    child.once("exit", (code) => failed(new Error(`server-everything exited (${code}): ${stderr}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((done) => child.once("exit", done));
      child.kill();
      await exited;
    },
  };
}
