/**
 * The attacker's own servers, on loopback only: an HTTP server (on 127.0.0.1 and, when the host
 * has IPv6 loopback, on [::1] at the same port) that records every request and answers 400, and
 * raw TCP traps that record every connection (for git:// and ssh:// sources). An attempt tags
 * what it sends (a path segment, a model name, a marker in a command) and counts the requests
 * that carry its tag; a canary secret found in any recorded request is a leaked key.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createServer as createTcpServer, type Server as TcpServer } from "node:net";

/** One request or connection the attacker received. */
export interface Received {
  via: "http" | "tcp";
  /** `METHOD url` for HTTP, the first bytes for a TCP trap. */
  line: string;
  /** Headers and body (HTTP), or everything read (TCP), as text. */
  text: string;
}

export interface Attacker {
  port: number;
  /** True when [::1] listens too. */
  ipv6: boolean;
  received(): readonly Received[];
  /** Requests whose line or text contains `tag`. */
  hits(tag: string): Received[];
  /** A raw TCP port that records connections; its hits carry `tag`. */
  tcpTrap(tag: string): Promise<number>;
  close(): Promise<void>;
}

const MAX_RECORDED_BYTES = 256 * 1024;

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_RECORDED_BYTES) chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", () => resolve(Buffer.concat(chunks).toString("utf8")));
  });
}

function listen(server: Server | TcpServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : port);
    });
  });
}

export async function startAttacker(): Promise<Attacker> {
  const received: Received[] = [];
  const handler = async (request: IncomingMessage, response: import("node:http").ServerResponse) => {
    const body = await readBody(request);
    received.push({
      via: "http",
      line: `${request.method} ${request.url}`,
      text: `${JSON.stringify(request.headers)}\n${body}`,
    });
    // A client error that no SDK retries: the run that called ends quickly.
    response.writeHead(400, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: { message: "attacker server", type: "invalid_request_error" } }));
  };
  const v4 = createServer(handler);
  const port = await listen(v4, 0, "127.0.0.1");
  const v6 = createServer(handler);
  const ipv6 = await listen(v6, port, "::1").then(
    () => true,
    () => false,
  );
  const traps: TcpServer[] = [];
  return {
    port,
    ipv6,
    received: () => received,
    hits: (tag) => received.filter((entry) => entry.line.includes(tag) || entry.text.includes(tag)),
    async tcpTrap(tag) {
      const trap = createTcpServer((socket) => {
        const chunks: Buffer[] = [];
        socket.on("data", (chunk: Buffer) => chunks.push(chunk));
        socket.setTimeout(2_000, () => socket.destroy());
        socket.on("close", () => {
          const text = Buffer.concat(chunks).toString("latin1");
          // The first bytes of a protocol greeting, printable (they end up in a table cell).
          const printable = text.slice(0, 80).replace(/[^\x20-\x7e]+/g, " ");
          received.push({ via: "tcp", line: `${tag} ${printable}`, text });
        });
      });
      traps.push(trap);
      return listen(trap, 0, "127.0.0.1");
    },
    async close() {
      const servers: Array<Server | TcpServer> = [v4, ...(ipv6 ? [v6] : []), ...traps];
      for (const server of servers) (server as Server).closeAllConnections?.();
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    },
  };
}
