// Over 400 lines: what the proxy reaches, which connections it opens and what it injects into them are one security boundary, kept readable in one place.
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
 * With tenant secrets (docs/tools.md, "Secrets") the proxy also terminates TLS for a CONNECT to a
 * host some secret of the call is bound to, with a leaf of the call's own CA (egress-tls.ts),
 * reads the HTTP/1.1 requests inside, replaces the secrets' placeholders where their bindings
 * allow (header values; the user:password of `Authorization: Basic`) and forwards each request
 * over a new TLS connection to the judged address, verifying the host's real certificate. Never
 * in a URL or a body, never on plain HTTP, never toward a host the secret is not bound to: every
 * other CONNECT stays an opaque tunnel.
 *
 * One proxy serves one tool call: its allowlist is that call's, and it closes with the call.
 */
import { randomBytes } from "node:crypto";
import { lookup } from "node:dns/promises";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Duplex, PassThrough } from "node:stream";
import * as tls from "node:tls";
import { isPublicAddress } from "../net/egress-policy";
import type { ResolvedSecret } from "../vault/types";
import type { CallCa } from "./egress-tls";

/** The system trust store's file (Debian, Ubuntu, Alpine, the worker image). */
export const SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";
/** The certificate code, loaded by the first call with secrets. */
const egressTls = (): typeof import("./egress-tls") => require("./egress-tls");

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
  /** Hosts the call may reach; the hosts of `secrets` must be on it too. */
  allowlist: readonly AllowedHost[];
  /** Whether a resolved address may be connected to (the operator's address rules). */
  isAllowedAddress: (address: string) => boolean;
  /** Name resolution; the system resolver by default (tests pass their own). */
  resolve?: (host: string) => Promise<string[]>;
  /** Told about every refusal, for the call's result and the worker's log. */
  onRefusal?: (refusal: { host: string; port: number; reason: string }) => void;
  /** The call's resolved secrets: the proxy terminates TLS for CONNECTs to their hosts. */
  secrets?: readonly ResolvedSecret[];
  /** Each secret's placeholder in the call (`placeholderFor`), by name; required with `secrets`. */
  placeholders?: Readonly<Record<string, string>>;
  /** A CA, PEM, whose certificates upstream servers may present besides the system store's. */
  extraCaPem?: string;
}

export interface EgressProxy {
  /** Refusals so far, newest last (at most 20 kept). */
  readonly refusals: readonly { host: string; port: number; reason: string }[];
  /** The call's CA, when it has secrets (what its sandbox must trust). */
  readonly ca?: CallCa;
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

/** A secret as one proxy holds it: where it may go, what stands for it, and its value as header bytes. */
interface Injection {
  hosts: AllowedHost[];
  placeholder: string;
  /** The value's UTF-8 bytes as a latin1 string: how Node reads and writes header bytes. */
  bytes: string;
  header: boolean;
  basic: boolean;
}

/** Where an intercepted TLS connection goes: the CONNECT's host and port, the judged address. */
interface InterceptTarget {
  host: string;
  port: number;
  address: string;
  injections: Injection[];
}

/** Headers of one hop only (RFC 9110, 7.6.1), plus the proxy's own; never forwarded. */
const HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "upgrade",
  "expect",
  "host",
]);

/** Replaces every placeholder of `injections` in `text` (latin1 header bytes). */
function replacePlaceholders(text: string, injections: readonly Injection[]): string {
  let out = text;
  for (const injection of injections) out = out.split(injection.placeholder).join(injection.bytes);
  return out;
}

/** A request header's value with the bound placeholders replaced as their bindings allow. */
function injectHeader(name: string, value: string, injections: readonly Injection[]): string {
  let out = value;
  const basic = injections.filter((injection) => injection.basic);
  const match = name === "authorization" ? /^(basic)\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(out) : null;
  if (match && basic.length > 0) {
    const decoded = Buffer.from(match[2] as string, "base64").toString("latin1");
    const replaced = replacePlaceholders(decoded, basic);
    if (replaced !== decoded) out = `${match[1]} ${Buffer.from(replaced, "latin1").toString("base64")}`;
  }
  return replacePlaceholders(
    out,
    injections.filter((injection) => injection.header),
  );
}

/** The headers to forward from `raw` (Node's rawHeaders), hop-by-hop ones dropped. */
function forwardedHeaders(raw: readonly string[], transform?: (name: string, value: string) => string) {
  const connectionTokens = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]?.toLowerCase() === "connection")
      for (const token of (raw[i + 1] ?? "").split(",")) connectionTokens.add(token.trim().toLowerCase());
  }
  const headers: Record<string, string[]> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (HOP_HEADERS.has(name) || connectionTokens.has(name)) continue;
    const value = raw[i + 1] as string;
    if (name === "transfer-encoding" && value.trim().toLowerCase() !== "chunked") continue;
    const values = headers[name] ?? [];
    values.push(transform ? transform(name, value) : value);
    headers[name] = values;
  }
  return headers;
}

/** Why an upstream TLS connection failed, in the words of a refusal, or undefined for other failures. */
function upstreamRefusal(error: NodeJS.ErrnoException): string | undefined {
  const code = error.code ?? "";
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") return "the host's certificate is not valid for its name";
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID")
    return "the host's certificate is outside its validity period";
  if (/CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ISSUER|CHAIN/.test(code) || /certificate/i.test(error.message))
    return "the host's certificate is not trusted";
  if (/^ERR_SSL|^ERR_TLS|EPROTO/.test(code)) return "the TLS handshake with the host failed";
  return undefined;
}

/** A duplex reading `head` and then `socket`, writing to `socket`. */
function startingWith(head: Buffer, socket: net.Socket): Duplex {
  const readable = new PassThrough();
  readable.write(head);
  socket.pipe(readable);
  return Duplex.from({ readable, writable: socket });
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
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };

  const secrets = options.secrets ?? [];
  const injections: Injection[] = secrets.map((secret) => {
    const placeholder = options.placeholders?.[secret.name];
    if (!placeholder) throw new Error(`no placeholder for the secret ${secret.name}`);
    return {
      hosts: parseAllowlist(secret.hosts),
      placeholder,
      bytes: Buffer.from(secret.value, "utf8").toString("latin1"),
      header: secret.in.includes("header"),
      basic: secret.in.includes("basic-auth"),
    };
  });
  const certificates = injections.length > 0 ? egressTls() : undefined;
  const ca = await certificates?.createCallCa(injections.flatMap((i) => i.hosts.map((entry) => entry.host)));
  const trust = certificates?.upstreamTrust(SYSTEM_CA_BUNDLE, options.extraCaPem);
  const agent = ca ? new https.Agent({ keepAlive: true }) : undefined;
  const targets = new WeakMap<net.Socket, InterceptTarget>();

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
    // Plain HTTP is forwarded as it came: a placeholder here stays a placeholder.
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

  /** One request to the judged address of an intercepted connection, verified against the trust store. */
  const forward = (
    target: InterceptTarget,
    url: string,
    method: string | undefined,
    headers: Record<string, string[]>,
  ) =>
    https.request({
      host: target.address,
      port: target.port,
      servername: target.host,
      method,
      path: url,
      // The host the connection was judged for, whatever the request says: a shared front end
      // (a CDN) must not route a request carrying a value to another of its customers.
      headers: { ...headers, host: target.port === 443 ? target.host : `${target.host}:${target.port}` },
      secureContext: trust,
      ALPNProtocols: ["http/1.1"],
      agent,
    } as https.RequestOptions & { secureContext?: tls.SecureContext });

  /**
   * The requests inside intercepted TLS connections: forwarded one by one to the judged address
   * over TLS verified against the system store, with the bound placeholders replaced in headers.
   * Bodies stream in both directions; nothing is buffered whole.
   */
  const inner = http.createServer((request, response) => {
    const target = targets.get(request.socket);
    const url = request.url ?? "";
    if (!target || !url.startsWith("/")) {
      response
        .writeHead(400, { "content-type": "text/plain" })
        .end("keel egress proxy: a request inside a tunnel names a path (origin-form) only\n");
      return;
    }
    let headers: Record<string, string[]>;
    try {
      headers = forwardedHeaders(request.rawHeaders, (name, value) =>
        injectHeader(name, value, target.injections),
      );
    } catch {
      response.writeHead(400).end("keel egress proxy: unreadable request headers\n");
      return;
    }
    let upstream: http.ClientRequest;
    try {
      upstream = forward(target, url, request.method, headers);
    } catch {
      // Node refuses what it cannot write (a header it will not send): the client is told, the worker goes on.
      response.writeHead(400).end("keel egress proxy: the request cannot be forwarded\n");
      request.resume();
      return;
    }
    upstream.on("response", (answer) => {
      const back = forwardedHeaders(answer.rawHeaders);
      delete back["transfer-encoding"];
      try {
        response.writeHead(answer.statusCode ?? 502, answer.statusMessage, back);
      } catch {
        answer.destroy();
        response.destroy();
        return;
      }
      answer.pipe(response);
    });
    upstream.on("error", (error: NodeJS.ErrnoException) => {
      const reason = upstreamRefusal(error);
      if (
        reason &&
        !refusals.some((r) => r.host === target.host && r.port === target.port && r.reason === reason)
      )
        refuse(target.host, target.port, reason);
      if (!response.headersSent) {
        response
          .writeHead(502, { "content-type": "text/plain" })
          .end(
            `keel egress proxy: ${target.host}:${target.port} ${reason ? `refused: ${reason}` : "failed"}\n`,
          );
      } else response.destroy();
    });
    response.on("close", () => {
      if (!response.writableFinished) upstream.destroy();
    });
    request.pipe(upstream);
  });
  // A call's wall time bounds a request, not the server (a large git push takes as long as it takes).
  inner.requestTimeout = 0;
  inner.on("clientError", (_error, socket) => socket.destroy());

  /** Answers a CONNECT to a bound host itself: TLS with the call CA's leaf, HTTP/1.1 inside. */
  const intercept = async (client: net.Socket, head: Buffer, target: InterceptTarget) => {
    const context = await (ca as CallCa).contextFor(target.host);
    if (client.destroyed) return;
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    // TLS reads a socket's handle directly, past anything already read from it: bytes a client
    // sent before the 200 (its ClientHello, optimistically) go through a stream that starts with them.
    const transport = head.length > 0 ? startingWith(head, client) : client;
    const secure = new tls.TLSSocket(transport as net.Socket, {
      isServer: true,
      secureContext: context,
      ALPNProtocols: ["http/1.1"],
    });
    track(secure);
    secure.on("error", () => secure.destroy());
    targets.set(secure, target);
    inner.emit("connection", secure);
  };

  server.on("connect", async (request: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    track(client);
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
    const host = authority.host.toLowerCase().replace(/\.$/, "");
    const bound = injections.filter((injection) => isAllowed(injection.hosts, host, authority.port));
    if (bound.length > 0) {
      await intercept(client, head, { host, port: authority.port, address, injections: bound }).catch(() =>
        client.destroy(),
      );
      return;
    }
    const upstream = net.connect({ host: address, port: authority.port });
    track(upstream);
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
  server.on("connection", track);

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.socketPath, () => resolve());
  });
  return {
    refusals,
    ca,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      agent?.destroy();
      inner.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Where the proxy's files appear inside the sandbox (each bound read-only on its own). */
const EGRESS_DIR_INSIDE = "/run/keel-egress";
/** The proxy socket's name, in the host folder and inside the sandbox. */
const EGRESS_SOCKET_NAME = "proxy.sock";
/** The call CA's certificate alone (NODE_EXTRA_CA_CERTS adds it to Node's own roots). */
const CALL_CA_NAME = "call-ca.pem";
/** The system bundle plus the call CA (also bound over the system bundle's path). */
const CA_BUNDLE_NAME = "ca-bundle.pem";

/** Variables naming the combined bundle: what curl, git, Python, pip, the AWS CLI and cargo read. */
const BUNDLE_VARIABLES = [
  "SSL_CERT_FILE",
  "CURL_CA_BUNDLE",
  "REQUESTS_CA_BUNDLE",
  "GIT_SSL_CAINFO",
  "PIP_CERT",
  "AWS_CA_BUNDLE",
  "CARGO_HTTP_CAINFO",
];

/** A fresh placeholder for the secret `name`: what its variable holds inside one call's sandbox. */
function placeholderFor(name: string): string {
  return `keel-placeholder-${name}-${randomBytes(16).toString("hex")}`;
}

/** What the sandbox of one call needs from its egress proxy: files to bind and variables to set. */
export interface SandboxEgress {
  /** Host path of the proxy's socket (bound read-only at `/run/keel-egress/proxy.sock`). */
  socketPath: string;
  /** With secrets: host paths of the call CA alone and of the combined bundle. */
  ca?: { certificateFile: string; bundleFile: string };
  /** Placeholders of the call's secrets and the CA variables. */
  env: Record<string, string>;
}

/** Inside paths of the files `SandboxEgress` names. */
export const EGRESS_INSIDE = {
  socket: `${EGRESS_DIR_INSIDE}/${EGRESS_SOCKET_NAME}`,
  certificate: `${EGRESS_DIR_INSIDE}/${CALL_CA_NAME}`,
  bundle: `${EGRESS_DIR_INSIDE}/${CA_BUNDLE_NAME}`,
} as const;

/** The egress proxy of one tool call: what its sandbox binds and sets, what it refused, and its end. */
export interface CallEgress extends SandboxEgress {
  /** The host folder holding the socket and CA files (never bound into the sandbox). */
  dir: string;
  refusals: EgressProxy["refusals"];
  close(): Promise<void>;
}

/** The tenant secrets of one call, resolved when the call starts. */
export interface CallSecrets {
  secrets?: readonly ResolvedSecret[];
  /** Names the run gives that the tenant no longer has: placeholders that stand for nothing. */
  missing?: readonly string[];
}

/** How a call's proxy resolves and judges names and which upstream CAs it trusts (tests; a private CA). */
export interface CallEgressOptions {
  resolve?: (host: string) => Promise<string[]>;
  isAllowedAddress?: (address: string) => boolean;
  /** A CA, PEM, trusted for upstream servers besides the system store. */
  extraCaPem?: string;
}

/**
 * Starts the egress proxy for one tool call whose run allows `allow` (already validated by the
 * API; validated again here) and names `secrets`: a fresh folder with the proxy's socket (and,
 * with secrets, the call CA and the combined bundle), addresses judged by the operator's rules
 * (public addresses only). The call may reach `allow` and every host a secret is bound to. Throws
 * for an invalid allowlist.
 */
export async function startCallEgress(
  allow: readonly string[],
  { secrets = [], missing = [] }: CallSecrets = {},
  options: CallEgressOptions = {},
): Promise<CallEgress> {
  const allowlist = parseAllowlist([...allow, ...secrets.flatMap((secret) => secret.hosts)]);
  const placeholders: Record<string, string> = {};
  for (const name of [...secrets.map((secret) => secret.name), ...missing])
    placeholders[name] ??= placeholderFor(name);
  const dir = await mkdtemp(path.join(tmpdir(), "keel-egress-"));
  try {
    const socketPath = path.join(dir, EGRESS_SOCKET_NAME);
    const proxy = await startEgressProxy({
      socketPath,
      allowlist,
      isAllowedAddress: options.isAllowedAddress ?? isPublicAddress,
      resolve: options.resolve,
      secrets,
      placeholders,
      extraCaPem: options.extraCaPem,
    });
    const env: Record<string, string> = { ...placeholders };
    let ca: SandboxEgress["ca"];
    if (proxy.ca) {
      ca = { certificateFile: path.join(dir, CALL_CA_NAME), bundleFile: path.join(dir, CA_BUNDLE_NAME) };
      await writeFile(ca.certificateFile, proxy.ca.certificatePem, { mode: 0o444 });
      const { systemTrustPem } = egressTls();
      await writeFile(
        ca.bundleFile,
        `${systemTrustPem(SYSTEM_CA_BUNDLE).trimEnd()}\n${proxy.ca.certificatePem}`,
        {
          mode: 0o444,
        },
      );
      for (const name of BUNDLE_VARIABLES) env[name] = EGRESS_INSIDE.bundle;
      env.NODE_EXTRA_CA_CERTS = EGRESS_INSIDE.certificate;
    }
    return {
      dir,
      socketPath,
      ca,
      env,
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
