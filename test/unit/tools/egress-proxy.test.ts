/**
 * The egress proxy on its own: CONNECT and plain HTTP to allowlisted names, refusals for names
 * not on the list, for IP literals, for names that resolve to a refused address (also one bad
 * answer among good ones), and the address judged is the address connected to.
 */
import { mkdtempSync, rmSync } from "node:fs";
import * as http from "node:http";
import type * as net from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type EgressProxy,
  isAllowed,
  parseAllowlist,
  startEgressProxy,
} from "../../../src/tools/egress-proxy";

describe("parseAllowlist", () => {
  test("names, wildcards and ports", () => {
    const list = parseAllowlist(["registry.npmjs.org", "*.pypi.org", "git.example.com:8443"]);
    expect(isAllowed(list, "registry.npmjs.org", 443)).toBe(true);
    expect(isAllowed(list, "REGISTRY.npmjs.org.", 80)).toBe(true);
    expect(isAllowed(list, "registry.npmjs.org", 22)).toBe(false);
    expect(isAllowed(list, "files.pypi.org", 443)).toBe(true);
    expect(isAllowed(list, "pypi.org", 443)).toBe(false);
    expect(isAllowed(list, "evilpypi.org", 443)).toBe(false);
    expect(isAllowed(list, "git.example.com", 8443)).toBe(true);
    expect(isAllowed(list, "git.example.com", 443)).toBe(false);
    expect(isAllowed(list, "npmjs.org", 443)).toBe(false);
  });

  test.each([
    "127.0.0.1",
    "169.254.169.254",
    "[::1]",
    "localhost",
    "*",
    "*.com",
    "a..b",
    "x.com:0",
    "x.com:99999",
    "-a.com",
    "http://x.com",
  ])("%j is refused", (entry) => {
    expect(() => parseAllowlist([entry])).toThrow("is not a host name");
  });
});

describe("the proxy", () => {
  let dir: string;
  let proxy: EgressProxy | undefined;
  let upstream: http.Server;
  let upstreamPort: number;
  const seen: string[] = [];

  beforeAll(async () => {
    upstream = http.createServer((request, response) => {
      seen.push(`${request.method} ${request.headers.host} ${request.url}`);
      response.end("upstream says hi");
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    upstreamPort = (upstream.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => upstream.close(resolve)));
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "keel-egress-"));
    seen.length = 0;
  });
  afterEach(async () => {
    await proxy?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A proxy whose resolver maps the test names; only 127.0.0.1 counts as reachable here. */
  async function start(allow: string[], names: Record<string, string[]>) {
    proxy = await startEgressProxy({
      socketPath: join(dir, "proxy.sock"),
      allowlist: parseAllowlist(allow),
      isAllowedAddress: (address) => address === "127.0.0.1",
      resolve: async (host) => {
        const addresses = names[host];
        if (!addresses) throw new Error("ENOTFOUND");
        return addresses;
      },
    });
    return join(dir, "proxy.sock");
  }

  /** CONNECT through the proxy, then one HTTP request over the tunnel; the status line or the answer. */
  function viaConnect(socketPath: string, authority: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const request = http.request({ socketPath, method: "CONNECT", path: authority });
      request.on("connect", (response, socket: net.Socket) => {
        if (response.statusCode !== 200) {
          socket.destroy();
          resolve(`refused ${response.statusCode}`);
          return;
        }
        let body = "";
        socket.on("data", (chunk) => {
          body += chunk;
        });
        socket.on("end", () => resolve(body.split("\r\n\r\n")[1] ?? body));
        socket.write(`GET /tunnel HTTP/1.1\r\nhost: ${authority}\r\nconnection: close\r\n\r\n`);
      });
      request.on("error", reject);
      request.end();
    });
  }

  function viaHttp(socketPath: string, url: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const request = http.request({ socketPath, method: "GET", path: url }, (response) => {
        let body = "";
        response.on("data", (chunk) => {
          body += chunk;
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      });
      request.on("error", reject);
      request.end();
    });
  }

  test("an allowlisted name is reached, by CONNECT and by plain HTTP, at the address it resolved to", async () => {
    const socket = await start([`api.example.test:${upstreamPort}`], { "api.example.test": ["127.0.0.1"] });
    expect(await viaConnect(socket, `api.example.test:${upstreamPort}`)).toBe("upstream says hi");
    const plain = await viaHttp(socket, `http://api.example.test:${upstreamPort}/plain?q=1`);
    expect(plain).toEqual({ status: 200, body: "upstream says hi" });
    expect(seen).toEqual([
      `GET api.example.test:${upstreamPort} /tunnel`,
      `GET api.example.test:${upstreamPort} /plain?q=1`,
    ]);
  });

  test.each([
    ["a name not on the list", "other.example.test", "not on the run's network allowlist"],
    ["an IP literal", "127.0.0.1", "addresses cannot be allowlisted"],
    ["a name resolving to a refused address", "internal.example.test", "not reachable from a sandbox"],
    ["a name with one refused answer among good ones", "mixed.example.test", "not reachable from a sandbox"],
    ["a name that does not resolve", "nowhere.example.test", "does not resolve"],
  ])("%s is refused and nothing reaches the upstream", async (_name, host, reason) => {
    const socket = await start(
      [
        `api.example.test:${upstreamPort}`,
        `internal.example.test:${upstreamPort}`,
        `mixed.example.test:${upstreamPort}`,
        `nowhere.example.test:${upstreamPort}`,
      ],
      {
        "api.example.test": ["127.0.0.1"],
        "internal.example.test": ["10.0.0.7"],
        "mixed.example.test": ["127.0.0.1", "169.254.169.254"],
      },
    );
    expect(await viaConnect(socket, `${host}:${upstreamPort}`)).toBe("refused 403");
    const plain = await viaHttp(socket, `http://${host}:${upstreamPort}/`);
    expect(plain.status).toBe(403);
    expect(plain.body).toContain(reason);
    expect(seen).toEqual([]);
    expect(proxy?.refusals.at(-1)?.reason).toContain(reason);
  });

  test("a port the entry does not allow is refused", async () => {
    const socket = await start(["api.example.test"], { "api.example.test": ["127.0.0.1"] });
    expect(await viaConnect(socket, `api.example.test:${upstreamPort}`)).toBe("refused 403");
    expect(seen).toEqual([]);
  });
});
