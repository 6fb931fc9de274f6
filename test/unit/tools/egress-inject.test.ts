/**
 * The egress proxy's secret injection on its own (no sandbox): which placeholders are replaced
 * where — a header-bound secret in header values, a basic-auth-bound one inside Basic
 * credentials, neither for a secret bound to another host — the Host header pinned to the judged
 * host, keep-alive inside the intercepted connection, absolute-form requests refused, and the call
 * CA's name constraints.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Duplex, PassThrough } from "node:stream";
import * as tls from "node:tls";
import { type EgressProxy, parseAllowlist, startEgressProxy } from "../../../src/tools/egress-proxy";
import { createCallCa } from "../../../src/tools/egress-tls";
import { type HttpsStandIn, startHttpsStandIn } from "../../support/https-stand-in";

describe("secret injection at the egress proxy", () => {
  let dir: string;
  let proxy: EgressProxy;
  let upstream: HttpsStandIn;
  let port: number;
  const seen: http.IncomingHttpHeaders[] = [];
  const A = "keel-placeholder-A-00000000000000000000000000000000";
  const B = "keel-placeholder-B-11111111111111111111111111111111";
  const C = "keel-placeholder-C-22222222222222222222222222222222";

  beforeAll(async () => {
    upstream = await startHttpsStandIn((request, response) => {
      seen.push(request.headers);
      request.resume();
      request.on("end", () => response.end("ok"));
    });
    port = upstream.port;
    dir = mkdtempSync(join(tmpdir(), "keel-egress-"));
    proxy = await startEgressProxy({
      socketPath: join(dir, "proxy.sock"),
      allowlist: parseAllowlist([`api.example.test:${port}`, `other.example.test:${port}`]),
      isAllowedAddress: (address) => address === "127.0.0.1",
      resolve: async () => ["127.0.0.1"],
      secrets: [
        { name: "A", value: "value-a", hosts: [`api.example.test:${port}`], in: ["basic-auth"] },
        { name: "B", value: "välue-b", hosts: [`api.example.test:${port}`], in: ["header"] },
        { name: "C", value: "value-c", hosts: [`other.example.test:${port}`], in: ["header", "basic-auth"] },
      ],
      placeholders: { A, B, C },
      extraCaPem: upstream.caPem,
    });
  });
  afterAll(async () => {
    await proxy.close();
    rmSync(dir, { recursive: true, force: true });
    await upstream.close();
  });
  beforeEach(() => {
    seen.length = 0;
  });

  /** CONNECT, TLS trusting the call CA only, then `requests` written in a row; the raw answer. */
  function through(host: string, requests: string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(join(dir, "proxy.sock"));
      socket.once("error", reject);
      socket.write(`CONNECT ${host}:${port} HTTP/1.1\r\nhost: ${host}:${port}\r\n\r\n`);
      socket.once("data", (chunk) => {
        expect(chunk.toString()).toMatch(/^HTTP\/1.1 200/);
        const secure = tls.connect({
          socket,
          servername: host,
          ca: proxy.ca?.certificatePem,
          ALPNProtocols: ["h2", "http/1.1"],
        });
        let answer = "";
        secure.on("secureConnect", () => {
          expect(secure.alpnProtocol).toBe("http/1.1");
          secure.write(requests.join(""));
        });
        secure.on("data", (data) => {
          answer += data;
        });
        secure.on("end", () => resolve(answer));
        secure.on("error", reject);
      });
    });
  }

  const basic = (text: string) => `Basic ${Buffer.from(text).toString("base64")}`;
  const decode = (header: string | undefined) =>
    Buffer.from((header ?? "").replace(/^Basic /, ""), "base64").toString();

  test("each placeholder is replaced only where its binding allows, on its host only", async () => {
    const host = `api.example.test:${port}`;
    const answer = await through("api.example.test", [
      `GET /one HTTP/1.1\r\nhost: evil.example\r\nauthorization: ${basic(`user:${A}`)}\r\nx-a: ${A}\r\nx-b: Bearer ${B}\r\nx-c: ${C}\r\n\r\n`,
      `GET /two HTTP/1.1\r\nhost: ${host}\r\nauthorization: ${basic(`${B}:${C}`)}\r\nconnection: close\r\n\r\n`,
    ]);
    expect(answer.match(/HTTP\/1.1 200/g)).toHaveLength(2);
    expect(seen).toHaveLength(2);
    const [one, two] = seen;
    expect(one?.host).toBe(host);
    expect(decode(one?.authorization)).toBe("user:value-a");
    expect(one?.["x-a"]).toBe(A);
    expect(Buffer.from(one?.["x-b"] as string, "latin1").toString("utf8")).toBe("Bearer välue-b");
    expect(one?.["x-c"]).toBe(C);
    expect(decode(two?.authorization)).toBe(`${B}:${C}`);
  });

  test("a secret bound to another host is replaced there and only there", async () => {
    await through("other.example.test", [
      `GET / HTTP/1.1\r\nhost: x\r\nx-a: ${A}\r\nx-c: ${C}\r\nconnection: close\r\n\r\n`,
    ]);
    expect(seen[0]?.["x-a"]).toBe(A);
    expect(seen[0]?.["x-c"]).toBe("value-c");
  });

  test("a client that sends its ClientHello with the CONNECT, before the 200, is served", async () => {
    const raw = net.connect(join(dir, "proxy.sock"));
    // What TLS reads: the proxy's bytes after its 200 line; what it writes goes right after the CONNECT.
    let skipped = false;
    let pending = Buffer.alloc(0);
    const incoming = new PassThrough();
    raw.on("data", (chunk: Buffer) => {
      if (skipped) return void incoming.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      const end = pending.indexOf("\r\n\r\n");
      if (end < 0) return;
      skipped = true;
      incoming.write(pending.subarray(end + 4));
    });
    raw.on("end", () => incoming.end());
    raw.cork();
    raw.write(`CONNECT api.example.test:${port} HTTP/1.1\r\nhost: api.example.test:${port}\r\n\r\n`);
    const secure = tls.connect({
      socket: Duplex.from({ readable: incoming, writable: raw }) as net.Socket,
      servername: "api.example.test",
      ca: proxy.ca?.certificatePem,
    });
    setImmediate(() => raw.uncork());
    const answer = await new Promise<string>((resolve, reject) => {
      let text = "";
      secure.on("secureConnect", () =>
        secure.write(`GET /eager HTTP/1.1\r\nhost: x\r\nx-b: ${B}\r\nconnection: close\r\n\r\n`),
      );
      secure.on("data", (data) => {
        text += data;
      });
      secure.on("end", () => resolve(text));
      secure.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1.1 200/);
    expect(seen[0]?.["x-b"]).toBeDefined();
  });

  test("an absolute-form request inside the tunnel is refused", async () => {
    const answer = await through("api.example.test", [
      `GET https://elsewhere.example/ HTTP/1.1\r\nhost: elsewhere.example\r\nx-b: ${B}\r\nconnection: close\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1.1 400/);
    expect(seen).toEqual([]);
  });

  test("the call CA cannot vouch for a name outside its secrets' hosts", async () => {
    const ca = await createCallCa(["api.example.test"]);
    const server = tls.createServer({
      SNICallback: (name, done) => ca.contextFor(name).then((c) => done(null, c)),
    });
    server.on("secureConnection", (socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const serverPort = (server.address() as AddressInfo).port;
    const attempt = (servername: string) =>
      new Promise<string>((resolve) => {
        const socket = tls.connect({
          port: serverPort,
          host: "127.0.0.1",
          servername,
          ca: ca.certificatePem,
        });
        socket.on("secureConnect", () => {
          socket.destroy();
          resolve("trusted");
        });
        socket.on("error", (error: NodeJS.ErrnoException) => resolve(`${error.code} ${error.message}`));
      });
    try {
      expect(await attempt("api.example.test")).toBe("trusted");
      expect(await attempt("evil.example.org")).toMatch(/permitted subtree violation/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
