/**
 * The egress proxy behind a run's network allowlist (`network: {allow: [...]}`): an HTTP proxy
 * on a Unix socket that the sandbox of one tool call reaches through a bridge inside its own,
 * otherwise empty, network namespace (docs/tools.md, "Network"). It forwards `CONNECT host:port`
 * (HTTPS and any TLS) and absolute-form HTTP requests to hosts the allowlist names, on the ports
 * it allows, and only after resolving the name itself and judging every address it resolves to:
 * a name that resolves to loopback, link-local (instance metadata, ECS credentials), private or
 * otherwise internal addresses is refused whatever the allowlist says, and the connection goes
 * to the address that was judged, so DNS cannot change the answer between the check and the use.
 *
 * One proxy serves one tool call: its allowlist is that call's, and it closes with the call.
 */
import { lookup } from "node:dns/promises";
import { mkdtemp, rm } from "node:fs/promises";
import * as http from "node:http";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { isPublicAddress } from "../net/egress-policy";

/** One allowlist entry: `example.com`, `*.example.com` (subdomains only), optionally `:port`. */
export interface AllowedHost {
  host: string;
  /** Subdomains of `host` rather than `host` itself. */
  subdomains: boolean;
  /** Ports allowed; default 80 and 443. */
  ports: readonly number[];
}

const DEFAULT_PORTS = [80, 443] as const;
/** Entries a run's allowlist may hold. */
export const MAX_NETWORK_ALLOWLIST = 50;
const HOST_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Parses allowlist entries (as a run gives them). Throws with the offending entry for anything
 * that is not a DNS name with an optional `*.` prefix and `:port`: IP literals are refused, since
 * an allowlist names services, and an address would bypass the address rules only by name.
 */
export function parseAllowlist(entries: readonly string[]): AllowedHost[] {
  return entries.map((entry) => {
    const match = /^(\*\.)?([^:]+)(?::(\d{1,5}))?$/.exec(entry.trim().toLowerCase());
    const host = match?.[2] ?? "";
    const labels = host.split(".");
    const port = match?.[3] === undefined ? undefined : Number(match[3]);
    if (
      !match ||
      labels.length < 2 ||
      !labels.every((label) => HOST_LABEL.test(label)) ||
      /^\d+$/.test(labels.at(-1) ?? "") ||
      (port !== undefined && (port < 1 || port > 65_535))
    ) {
      throw new Error(
        `network allowlist entry ${JSON.stringify(entry)} is not a host name (example.com, *.example.com, example.com:8443)`,
      );
    }
    return { host, subdomains: match[1] !== undefined, ports: port === undefined ? DEFAULT_PORTS : [port] };
  });
}

/** Whether `host:port` is on the allowlist (names compared case-insensitively, without a trailing dot). */
export function isAllowed(allowlist: readonly AllowedHost[], host: string, port: number): boolean {
  const name = host.toLowerCase().replace(/\.$/, "");
  return allowlist.some(
    (entry) =>
      entry.ports.includes(port) &&
      (entry.subdomains ? name.endsWith(`.${entry.host}`) : name === entry.host),
  );
}

export interface EgressProxyOptions {
  /** Unix socket path to listen on (created; removed on close). */
  socketPath: string;
  allowlist: readonly AllowedHost[];
  /** Whether a resolved address may be connected to (the operator's address rules). */
  isAllowedAddress: (address: string) => boolean;
  /** Name resolution; the system resolver by default (tests pass their own). */
  resolve?: (host: string) => Promise<string[]>;
  /** Told about every refusal, for the call's result and the worker's log. */
  onRefusal?: (refusal: { host: string; port: number; reason: string }) => void;
}

export interface EgressProxy {
  /** Refusals so far, newest last (at most 20 kept). */
  readonly refusals: readonly { host: string; port: number; reason: string }[];
  close(): Promise<void>;
}

const systemResolve = async (host: string) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Judges `host:port` and resolves it to the one address to connect to; throws with the reason
 * when the host is not allowed, does not resolve, or resolves to an address that is refused.
 */
async function destination(options: EgressProxyOptions, host: string, port: number): Promise<string> {
  const bare = host.replace(/^\[|\]$/g, "");
  if (net.isIP(bare) !== 0) throw new Error("addresses cannot be allowlisted; use a host name");
  if (!isAllowed(options.allowlist, bare, port))
    throw new Error("the host is not on the run's network allowlist");
  let addresses: string[];
  try {
    addresses = await (options.resolve ?? systemResolve)(bare);
  } catch {
    throw new Error("the host name does not resolve");
  }
  // Every answer is judged: a name with one internal address among public ones is refused.
  const refused = addresses.find((address) => !options.isAllowedAddress(address));
  if (refused !== undefined || addresses.length === 0) {
    throw new Error(
      `the host resolves to an address that is not reachable from a sandbox (${refused ?? "none"})`,
    );
  }
  return addresses[0] as string;
}

function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(authority);
  if (!match) return undefined;
  return { host: match[1] as string, port: Number(match[2]) };
}

/** Starts a proxy for one tool call. */
export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const refusals: { host: string; port: number; reason: string }[] = [];
  const refuse = (host: string, port: number, reason: string) => {
    refusals.push({ host, port, reason });
    if (refusals.length > 20) refusals.shift();
    options.onRefusal?.({ host, port, reason });
  };
  const sockets = new Set<net.Socket>();

  const server = http.createServer(async (request, response) => {
    // Absolute-form HTTP through the proxy (`http_proxy`).
    let target: URL;
    try {
      target = new URL(request.url ?? "");
      if (target.protocol !== "http:") throw new Error();
    } catch {
      response
        .writeHead(400, { "content-type": "text/plain" })
        .end("keel egress proxy: absolute http:// URLs only\n");
      return;
    }
    const port = target.port === "" ? 80 : Number(target.port);
    let address: string;
    try {
      address = await destination(options, target.hostname, port);
    } catch (error) {
      const reason = (error as Error).message;
      refuse(target.hostname, port, reason);
      response
        .writeHead(403, { "content-type": "text/plain" })
        .end(`keel egress proxy: ${target.host} refused: ${reason}\n`);
      return;
    }
    const headers: http.OutgoingHttpHeaders = { ...request.headers, host: target.host };
    delete headers["proxy-connection"];
    delete headers["proxy-authorization"];
    const upstream = http.request(
      { host: address, port, method: request.method, path: `${target.pathname}${target.search}`, headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on("error", () => {
      if (!response.headersSent) response.writeHead(502).end("keel egress proxy: upstream failed\n");
      else response.destroy();
    });
    request.pipe(upstream);
  });

  server.on("connect", async (request: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    const authority = parseAuthority(request.url ?? "");
    if (!authority) {
      client.end("HTTP/1.1 400 Bad Request\r\n\r\n");
      return;
    }
    let address: string;
    try {
      address = await destination(options, authority.host, authority.port);
    } catch (error) {
      const reason = (error as Error).message;
      refuse(authority.host, authority.port, reason);
      client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\nkeel egress proxy: ${reason}\n`);
      return;
    }
    const upstream = net.connect({ host: address, port: authority.port });
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    upstream.once("connect", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => {
      if (!client.destroyed) client.end("HTTP/1.1 502 Bad Gateway\r\n\r\n");
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.socketPath, () => resolve());
  });
  return {
    refusals,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The proxy socket's name in the folder bound into the sandbox. */
export const EGRESS_SOCKET_NAME = "proxy.sock";

/** The egress proxy of one tool call: the folder to bind into its sandbox, what it refused, and its end. */
export interface CallEgress {
  dir: string;
  refusals: EgressProxy["refusals"];
  close(): Promise<void>;
}

/**
 * Starts the egress proxy for one tool call whose run allows `allow` (already validated by the
 * API; validated again here): a fresh folder with the proxy's socket, addresses judged by the
 * operator's rules (public addresses only). Throws for an invalid allowlist.
 */
export async function startCallEgress(allow: readonly string[]): Promise<CallEgress> {
  const allowlist = parseAllowlist(allow);
  const dir = await mkdtemp(path.join(tmpdir(), "keel-egress-"));
  try {
    const proxy = await startEgressProxy({
      socketPath: path.join(dir, EGRESS_SOCKET_NAME),
      allowlist,
      isAllowedAddress: isPublicAddress,
    });
    return {
      dir,
      refusals: proxy.refusals,
      close: async () => {
        await proxy.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
