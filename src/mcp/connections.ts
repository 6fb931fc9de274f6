/**
 * The worker's MCP clients: one connection per session and server, opened on first use and kept
 * while the session uses it (closed after an idle minute, or when it fails). A stdio server runs in
 * the session's sandbox (tools/sandbox.ts) with the workspace at /workspace, the run's network
 * ("none" unless the run has "full" and the worker allows it), and only the environment its
 * settings give (secrets resolved here, from variables the operator lists); an HTTP server is
 * reached through the guarded fetch (net/guarded-fetch.ts), so a name resolving to an internal
 * address is refused unless the operator allows that host.
 */
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { guardedFetch } from "../net/guarded-fetch";
import { bashCommandLine, type SandboxPolicy } from "../tools/sandbox";
import { MCP_SECRETS_SETTING, type McpSettings } from "./policy";
import { CommandLineTransport } from "./stdio-transport";
import { isHttpServer, type McpServerSettings, type McpValue } from "./types";

/** A connection unused this long is closed (its server process ends). */
const IDLE_CLOSE_MS = 60_000;
/** Longest wait for a server to start and answer `initialize`. */
const CONNECT_TIMEOUT_MS = 30_000;

/** Where and how one session's servers run on this worker. */
export interface McpSessionContext {
  /** `<tenant>/<session>`: connections are never shared across sessions. */
  sessionKey: string;
  /** The workspace directory (a real path). */
  workspaceDir: string;
  /** The run's sandbox for tool processes; network allowlists are not offered to servers ("none"). */
  sandbox: SandboxPolicy;
}

/** A server that could not be reached or started; its message is what the run reports. */
class McpServerUnavailable extends Error {
  constructor(server: string, why: string) {
    super(`MCP server ${server} is unavailable: ${why}`);
    this.name = "McpServerUnavailable";
  }
}

interface Pooled {
  client: Promise<Client>;
  idle?: NodeJS.Timeout;
  busy: number;
  /** The server's name in the run's settings. */
  server: string;
  /** The server sent `notifications/tools/list_changed` since its tools were last listed. */
  toolsChanged: boolean;
}

export class McpConnections {
  private readonly pool = new Map<string, Pooled>();

  /** `settings`: the process's KEEL_MCP_* settings and the values of the secrets they list (mcpSettingsFromEnv). */
  constructor(private readonly settings: McpSettings) {}

  /**
   * Runs `use` with a connected client of `server` for the session, connecting first when needed.
   * A failure to connect throws McpServerUnavailable; a connection that closes is dropped, so the
   * next use starts the server again.
   */
  async with<T>(
    context: McpSessionContext,
    server: McpServerSettings,
    use: (client: Client) => Promise<T>,
  ): Promise<T> {
    const key = poolKey(context, server);
    let pooled = this.pool.get(key);
    if (!pooled) {
      const forget = () => {
        if (this.pool.get(key) === created) this.pool.delete(key);
      };
      const changed = () => {
        created.toolsChanged = true;
      };
      const created: Pooled = {
        busy: 0,
        server: server.name,
        toolsChanged: false,
        client: this.connect(context, server, forget, changed),
      };
      created.client.catch(forget);
      pooled = created;
      this.pool.set(key, pooled);
    }
    const entry = pooled;
    clearTimeout(entry.idle);
    entry.busy += 1;
    try {
      return await use(await entry.client);
    } finally {
      entry.busy -= 1;
      if (entry.busy === 0) {
        entry.idle = setTimeout(() => void this.drop(key), IDLE_CLOSE_MS);
        entry.idle.unref();
      }
    }
  }

  /**
   * The session's servers that said their tool list changed (`notifications/tools/list_changed`)
   * since it was last listed on this worker, in no particular order.
   */
  changedServers(context: Pick<McpSessionContext, "sessionKey">): string[] {
    const prefix = `${context.sessionKey}/`;
    return [...this.pool.entries()].flatMap(([key, pooled]) =>
      key.startsWith(prefix) && pooled.toolsChanged ? [pooled.server] : [],
    );
  }

  /**
   * Records that `server`'s tools were just listed: a change it announced before the listing's
   * answer is in that answer (notifications and answers arrive in order on one connection).
   */
  markListed(context: McpSessionContext, server: McpServerSettings): void {
    const pooled = this.pool.get(poolKey(context, server));
    if (pooled) pooled.toolsChanged = false;
  }

  /** Closes the session's connections (their servers worked in a copy of its workspace that is gone). */
  async closeSession(sessionKey: string): Promise<void> {
    const prefix = `${sessionKey}/`;
    await Promise.all(
      [...this.pool.keys()].filter((key) => key.startsWith(prefix)).map((key) => this.drop(key)),
    );
  }

  /** Closes every connection (worker shutdown). */
  async closeAll(): Promise<void> {
    await Promise.all([...this.pool.keys()].map((key) => this.drop(key)));
  }

  private async drop(key: string): Promise<void> {
    const pooled = this.pool.get(key);
    if (!pooled) return;
    this.pool.delete(key);
    clearTimeout(pooled.idle);
    await pooled.client.then((client) => client.close()).catch(() => {});
  }

  private async connect(
    context: McpSessionContext,
    server: McpServerSettings,
    onClose: () => void,
    onToolsChanged: () => void,
  ): Promise<Client> {
    let transport: Transport;
    let stdio: CommandLineTransport | undefined;
    try {
      if (isHttpServer(server)) {
        const headers = this.resolve(server.headers);
        const allowed = (host: string) => this.settings.policy.privateHosts.includes(host);
        transport = new StreamableHTTPClientTransport(new URL(server.url), {
          fetch: guardedFetch(allowed),
          requestInit: { headers },
        });
      } else {
        const script = `exec ${[server.command, ...(server.args ?? [])].map(shellQuote).join(" ")}`;
        const network = context.sandbox.network === "full" ? "full" : "none";
        const policy: SandboxPolicy = {
          ...context.sandbox,
          network,
          readOnlyPaths: this.settings.mounts,
          extraEnv: this.resolve(server.env),
        };
        stdio = new CommandLineTransport(bashCommandLine(context.workspaceDir, policy, script));
        transport = stdio;
      }
    } catch (error) {
      throw new McpServerUnavailable(server.name, messageOf(error));
    }
    const client = new Client({ name: "keel", version: "1" }, { capabilities: {} });
    client.onclose = onClose;
    client.setNotificationHandler(ToolListChangedNotificationSchema, onToolsChanged);
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    } catch (error) {
      await client.close().catch(() => {});
      const stderr = stdio?.stderrTail();
      throw new McpServerUnavailable(
        server.name,
        `${messageOf(error)}${stderr ? ` (stderr: ${stderr})` : ""}`,
      );
    }
    return client;
  }

  /** Literal values as they are; `{secret}` from the worker's environment, only where the operator allows it. */
  private resolve(values: Record<string, McpValue> | undefined): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(values ?? {})) {
      if (typeof value === "string") {
        out[name] = value;
        continue;
      }
      if (!this.settings.policy.secrets.includes(value.secret))
        throw new Error(
          `the secret ${value.secret} is not one this worker lets MCP servers have (${MCP_SECRETS_SETTING})`,
        );
      const secret = this.settings.secretValues[value.secret];
      if (secret === undefined) throw new Error(`the secret ${value.secret} is not set on this worker`);
      out[name] = secret;
    }
    return out;
  }
}

function poolKey(context: McpSessionContext, server: McpServerSettings): string {
  return `${context.sessionKey}/${server.name}/${digest(server)}`;
}

/** Settings identify a connection: a run that changes a server's settings gets a new one. */
function digest(server: McpServerSettings): string {
  return createHash("sha256").update(JSON.stringify(server)).digest("hex").slice(0, 16);
}

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** An error's message with its causes' (fetch wraps an egress refusal as "fetch failed"). */
export function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause !== undefined ? `${error.message}: ${messageOf(error.cause)}` : error.message;
}
