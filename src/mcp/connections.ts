/**
 * The worker's MCP clients: one connection per session and server, opened on first use and kept
 * while the session uses it (closed after an idle minute, or when it fails). A stdio server runs in
 * the session's sandbox (tools/sandbox.ts) with the workspace at /workspace, the run's network
 * ("none" unless the run has "full" and the worker allows it), and only the environment its
 * settings give; an HTTP server is reached through the guarded fetch (net/guarded-fetch.ts), so a
 * name resolving to an internal address is refused unless the operator allows that host.
 *
 * A server's `{secret: NAME}` names one of the tenant's secrets (docs/tools.md, "Secrets"), read
 * when the connection opens (a rotation reaches a server at its next connection). An HTTP
 * server's header gets the value here, host-side, only when the server's URL is HTTPS and its host
 * is one the secret is bound to; otherwise the server is unavailable, saying why. A stdio server's
 * variable gets a placeholder, and its sandbox an egress proxy (for the connection's life) that
 * reaches only the secrets' hosts and swaps the value in there, as for a bash call.
 */
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { guardedFetch } from "../net/guarded-fetch";
import { type CallEgress, isAllowed, parseAllowlist, startCallEgress } from "../tools/egress-proxy";
import { bashCommandLine, findExecutable, type SandboxPolicy } from "../tools/sandbox";
import type { SecretsForCall } from "../vault/types";
import type { McpSettings } from "./policy";
import { CommandLineTransport } from "./stdio-transport";
import {
  isHttpServer,
  type McpHttpServer,
  type McpServerSettings,
  type McpValue,
  secretNamesOf,
} from "./types";

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
  /**
   * Reads the tenant's secrets a server names (`{secret: NAME}`) when its connection opens
   * (the worker's vault; on a runner, the secrets its claim carried). Absent: none can be read here.
   */
  secrets?: (names: readonly string[]) => Promise<SecretsForCall>;
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

  /** `settings`: the process's KEEL_MCP_* settings (mcpSettingsFromEnv). */
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
    let egress: CallEgress | undefined;
    try {
      const secrets = await secretsOf(context, server);
      if (isHttpServer(server)) {
        const headers = httpHeaders(server, secrets);
        const allowed = (host: string) => this.settings.policy.privateHosts.includes(host);
        transport = new StreamableHTTPClientTransport(new URL(server.url), {
          fetch: guardedFetch(allowed),
          requestInit: { headers },
        });
      } else {
        const script = `exec ${[server.command, ...(server.args ?? [])].map(shellQuote).join(" ")}`;
        const named = secrets.secrets.length + secrets.missing.length > 0;
        // With secrets the server reaches their hosts only, through its proxy ("full" would bypass it).
        const network = context.sandbox.network === "full" && !named ? "full" : "none";
        const policy: SandboxPolicy = {
          ...context.sandbox,
          network,
          readOnlyPaths: this.settings.mounts,
          ...(named ? { secrets: secrets.secrets, missingSecrets: secrets.missing } : {}),
        };
        if (named) egress = await stdioEgress(policy);
        policy.extraEnv = stdioEnv(server.env, egress);
        stdio = new CommandLineTransport(
          bashCommandLine(context.workspaceDir, policy, script, undefined, egress),
        );
        transport = stdio;
      }
    } catch (error) {
      await egress?.close();
      throw new McpServerUnavailable(server.name, messageOf(error));
    }
    const client = new Client({ name: "keel", version: "1" }, { capabilities: {} });
    // The server's proxy lives as long as its connection.
    client.onclose = () => {
      onClose();
      void egress?.close();
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, onToolsChanged);
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    } catch (error) {
      await client.close().catch(() => {});
      await egress?.close();
      const stderr = stdio?.stderrTail();
      throw new McpServerUnavailable(
        server.name,
        `${messageOf(error)}${stderr ? ` (stderr: ${stderr})` : ""}`,
      );
    }
    return client;
  }
}

/** The tenant secrets `server` names, read now; none read when it names none. */
async function secretsOf(context: McpSessionContext, server: McpServerSettings): Promise<SecretsForCall> {
  const names = secretNamesOf([server]);
  if (names.length === 0) return { secrets: [], missing: [] };
  if (!context.secrets)
    throw new Error(
      `it names tenant secrets (${names.join(", ")}), and no vault is configured here (KEEL_VAULT_KEY_FILE or KEEL_VAULT_KMS_KEY_ID)`,
    );
  return context.secrets(names);
}

/**
 * An HTTP server's headers: literal values as they are, a `{secret}` its value, only over HTTPS
 * and only when the URL's host is one the secret is bound to (the value never goes elsewhere).
 */
function httpHeaders(server: McpHttpServer, resolved: SecretsForCall): Record<string, string> {
  const url = new URL(server.url);
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(server.headers ?? {})) {
    if (typeof value === "string") {
      out[name] = value;
      continue;
    }
    const secret = resolved.secrets.find((candidate) => candidate.name === value.secret);
    if (!secret) throw new Error(`the secret ${value.secret} is not set for this tenant (keel secret list)`);
    if (url.protocol !== "https:")
      throw new Error(`the secret ${value.secret} is sent over HTTPS only, and ${server.url} is plain HTTP`);
    if (!isAllowed(parseAllowlist(secret.hosts), url.hostname, port))
      throw new Error(
        `the secret ${value.secret} is bound to ${secret.hosts.join(", ")}, not to ${url.host}: its value goes only to the hosts it is bound to (keel secret set ${value.secret} --host ${url.host} binds it there)`,
      );
    out[name] = secret.value;
  }
  return out;
}

/** A stdio server's environment: literal values as they are, a `{secret}` its placeholder of the connection. */
function stdioEnv(
  values: Record<string, McpValue> | undefined,
  egress: CallEgress | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(values ?? {})) {
    if (typeof value === "string") out[name] = value;
    else {
      const placeholder = egress?.env[value.secret];
      if (placeholder === undefined) throw new Error(`no placeholder for the secret ${value.secret}`);
      out[name] = placeholder;
    }
  }
  return out;
}

/** The egress proxy of a stdio server naming secrets: their hosts only, values injected there. */
async function stdioEgress(policy: SandboxPolicy): Promise<CallEgress> {
  if (policy.isolation === "off")
    throw new Error(
      "it names tenant secrets, which only a sandboxed worker with its egress proxy can inject",
    );
  if (!findExecutable("socat"))
    throw new Error(
      "it names tenant secrets, and socat (the sandbox's bridge to the egress proxy) is not installed here",
    );
  return startCallEgress(
    (policy.secrets ?? []).flatMap((secret) => secret.hosts),
    { secrets: policy.secrets, missing: policy.missingSecrets },
    policy.egressOptions,
  );
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
