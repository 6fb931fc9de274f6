/**
 * Tenant secrets through the real sandbox and its egress proxy (docs/tools.md, "Secrets"): the
 * sandbox holds placeholders; the proxy swaps the value in on HTTPS requests to the bound host
 * only (a local HTTPS server standing in for it, its certificate from a test CA the proxy trusts
 * as it would a public one), in a header and in git's Basic credentials; never toward another
 * host, over plain HTTP, in a URL or in a body; the value appears nowhere inside the sandbox or in
 * the call's output; an upstream certificate the proxy does not trust is refused; the proxy's
 * socket cannot be replaced; "full" with secrets is refused and "none" with secrets reaches only
 * the secrets' hosts.
 */
import { type ChildProcessByStdio, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import type { Readable, Writable } from "node:stream";
import { createCallCa } from "../../../src/tools/egress-tls";
import { DEFAULT_SANDBOX_POLICY, probeSandbox, type SandboxPolicy } from "../../../src/tools/sandbox";
import type { ResolvedSecret } from "../../../src/vault/types";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

const canRun = probeSandbox().ok && spawnSync("socat", ["-V"]).status === 0;
const maybe = canRun ? describe : describe.skip;

/** What the stand-in servers received. */
interface Seen {
  host: string;
  url: string;
  authorization?: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

maybe("tenant secrets at the egress proxy", () => {
  const value = `real-${randomBytes(12).toString("hex")}`;
  const seen: Seen[] = [];
  let sandbox: Sandbox;
  let servers: { close(cb: () => void): void }[] = [];
  let tlsPort: number;
  let untrustedPort: number;
  let httpPort: number;
  let gitRoot: string;
  let policy: SandboxPolicy;

  /** A local HTTPS server; `/repo.git/…` is a smart-HTTP git server (git http-backend, as CGI). */
  function handler(request: http.IncomingMessage, response: http.ServerResponse) {
    const chunks: Buffer[] = [];
    const isGit = (request.url ?? "").startsWith("/repo.git/");
    const record = (body: string) =>
      seen.push({
        host: request.headers.host ?? "",
        url: request.url ?? "",
        authorization: request.headers.authorization,
        headers: request.headers,
        body,
      });
    if (!isGit) {
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        record(Buffer.concat(chunks).toString("utf8"));
        response.end("stand-in says hi\n");
      });
      return;
    }
    record("");
    if (!request.headers.authorization) {
      request.resume();
      response.writeHead(401, { "www-authenticate": 'Basic realm="git"' }).end();
      return;
    }
    const url = new URL(request.url ?? "/", "https://stand-in");
    const cgi: ChildProcessByStdio<Writable, Readable, null> = spawn("git", ["http-backend"], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: gitRoot,
        GIT_HTTP_EXPORT_ALL: "1",
        REQUEST_METHOD: request.method ?? "GET",
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.replace(/^\?/, ""),
        CONTENT_TYPE: request.headers["content-type"] ?? "",
        ...(request.headers["content-length"] ? { CONTENT_LENGTH: request.headers["content-length"] } : {}),
        ...(request.headers["content-encoding"]
          ? { HTTP_CONTENT_ENCODING: request.headers["content-encoding"] }
          : {}),
        ...(typeof request.headers["git-protocol"] === "string"
          ? { GIT_PROTOCOL: request.headers["git-protocol"] }
          : {}),
        REMOTE_USER: "x-access-token",
        REMOTE_ADDR: "127.0.0.1",
      },
      stdio: ["pipe", "pipe", "inherit"],
    });
    request.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on("data", (chunk: Buffer) => {
      if (headersDone) {
        response.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).trim().toLowerCase();
        const headerValue = line.slice(colon + 1).trim();
        if (name === "status") status = Number.parseInt(headerValue, 10);
        else headers[name] = headerValue;
      }
      response.writeHead(status, headers);
      response.write(head.subarray(end + 4));
    });
    cgi.stdout.on("end", () => response.end());
  }

  async function listen(server: http.Server | https.Server): Promise<number> {
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return (server.address() as AddressInfo).port;
  }

  const secret = (): ResolvedSecret => ({
    name: "TOKEN",
    value,
    hosts: [
      `api.bound.test:${tlsPort}`,
      `api.bound.test:${httpPort}`,
      `untrusted.bound.test:${untrustedPort}`,
    ],
    in: ["header", "basic-auth"],
  });

  beforeAll(async () => {
    // The "public" CA the proxy trusts (as the system store's), and one it does not.
    const publicCa = await createCallCa([]);
    const otherCa = await createCallCa([]);
    const sni =
      (ca: typeof publicCa) =>
      (name: string, done: (error: Error | null, context?: import("node:tls").SecureContext) => void) => {
        ca.contextFor(name).then(
          (context) => done(null, context),
          (error: Error) => done(error),
        );
      };
    tlsPort = await listen(https.createServer({ SNICallback: sni(publicCa) }, handler));
    untrustedPort = await listen(https.createServer({ SNICallback: sni(otherCa) }, handler));
    httpPort = await listen(http.createServer(handler));

    sandbox = await makeSandbox();
    gitRoot = path.join(sandbox.base, "git");
    await fs.mkdir(gitRoot);
    spawnSync("git", ["init", "-q", "--bare", path.join(gitRoot, "repo.git")]);
    spawnSync("git", ["--git-dir", path.join(gitRoot, "repo.git"), "config", "http.receivepack", "true"]);

    policy = {
      ...DEFAULT_SANDBOX_POLICY,
      network: { allow: [`other.test:${tlsPort}`] },
      secrets: [secret()],
      missingSecrets: ["GONE"],
      egressOptions: {
        resolve: async (host) => {
          if (!host.endsWith(".test")) throw new Error("ENOTFOUND");
          return ["127.0.0.1"];
        },
        isAllowedAddress: (address) => address === "127.0.0.1",
        extraCaPem: publicCa.certificatePem,
      },
    };
    sandbox.ctx.sandbox = policy;
  });
  afterAll(async () => {
    await removeSandbox(sandbox);
    for (const server of servers) await new Promise<void>((resolve) => server.close(() => resolve()));
    servers = [];
  });
  beforeEach(() => {
    seen.length = 0;
  });

  const bash = async (command: string) => {
    const text = textOf(await sandbox.run("bash", { command, timeout: 60 }));
    // Whatever the command did, the value is never in the call's result.
    expect(text).not.toContain(value);
    return text;
  };

  test("curl with a Bearer header reaches the bound host with the real value; the sandbox holds a placeholder and trusts the call CA", async () => {
    const started = Date.now();
    const text = await bash(
      `echo "token=$TOKEN gone=$GONE"; curl -sS -m 20 -H "Authorization: Bearer $TOKEN" https://api.bound.test:${tlsPort}/api; echo "ssl=$SSL_CERT_FILE node=$NODE_EXTRA_CA_CERTS git=$GIT_SSL_CAINFO"`,
    );
    const elapsed = Date.now() - started;
    expect(text).toMatch(/token=keel-placeholder-TOKEN-[0-9a-f]{32} gone=keel-placeholder-GONE-[0-9a-f]{32}/);
    expect(text).toContain("stand-in says hi");
    expect(text).toContain(
      "ssl=/run/keel-egress/ca-bundle.pem node=/run/keel-egress/call-ca.pem git=/run/keel-egress/ca-bundle.pem",
    );
    expect(text).toContain("[secrets: GONE is not set for this tenant]");
    expect(seen).toHaveLength(1);
    expect(seen[0]?.authorization).toBe(`Bearer ${value}`);
    expect(seen[0]?.host).toBe(`api.bound.test:${tlsPort}`);
    // A rough figure for the report: a whole call with secrets (sandbox, CA, leaf, TLS twice, curl).
    process.stdout.write(`one call with secrets and a curl through the proxy: ${elapsed} ms\n`);
  });

  test("clients that read only the system bundle's path trust the call CA too (it is bound over it)", async () => {
    const unset = "env -u SSL_CERT_FILE -u CURL_CA_BUNDLE -u REQUESTS_CA_BUNDLE";
    const text = await bash(
      [
        `${unset} curl -sS -m 20 -H "X-Key: $TOKEN" https://api.bound.test:${tlsPort}/curl-system`,
        `${unset} python3 -c 'import os, urllib.request; print(urllib.request.urlopen(urllib.request.Request("https://api.bound.test:${tlsPort}/python", headers={"X-Key": os.environ["TOKEN"]}), timeout=20).read().decode())'`,
      ].join("; "),
    );
    expect(text.match(/stand-in says hi/g)).toHaveLength(2);
    expect(seen.map((entry) => [entry.url, entry.headers["x-key"]])).toEqual([
      ["/curl-system", value],
      ["/python", value],
    ]);
  });

  test("git push over HTTPS with the placeholder in the URL's credentials pushes, and the server sees the real Basic credentials", async () => {
    const text = await bash(
      [
        "set -e; cd /tmp; git init -q repo; cd repo",
        "head -c 3000000 /dev/urandom > big.bin; echo hi > a.txt; git add .",
        "git -c user.email=a@example.com -c user.name=a commit -q -m first",
        `git push -q "https://x-access-token:$TOKEN@api.bound.test:${tlsPort}/repo.git" HEAD:refs/heads/main 2>&1`,
        "echo pushed",
      ].join("\n"),
    );
    expect(text).toContain("pushed");
    const refs = spawnSync("git", ["--git-dir", path.join(gitRoot, "repo.git"), "show-ref"], {
      encoding: "utf8",
    });
    expect(refs.stdout).toContain("refs/heads/main");
    const authorized = seen.filter((entry) => entry.authorization);
    expect(authorized.length).toBeGreaterThan(0);
    for (const entry of authorized) {
      expect(Buffer.from((entry.authorization ?? "").replace(/^Basic /, ""), "base64").toString()).toBe(
        `x-access-token:${value}`,
      );
    }
    // The large pack went as a streamed (chunked) body.
    expect(
      seen.some((entry) => entry.url.includes("git-receive-pack") && entry.headers["transfer-encoding"]),
    ).toBe(true);
  });

  test("the placeholder does not carry the value to an unbound host, over plain HTTP, in the URL or in a body", async () => {
    await bash(
      [
        // An unbound host: an opaque tunnel; the call CA is not involved, so curl must skip verification.
        `curl -sS -k -m 20 -H "Authorization: Bearer $TOKEN" https://other.test:${tlsPort}/unbound`,
        // The bound host over plain HTTP (the secret is bound to that port too).
        `curl -sS -m 20 -H "Authorization: Bearer $TOKEN" http://api.bound.test:${httpPort}/plain`,
        // In the URL and in the body of a request to the bound host over HTTPS.
        `curl -sS -m 20 "https://api.bound.test:${tlsPort}/query?token=$TOKEN" -d "token=$TOKEN"`,
        // A Host header naming another site does not redirect the request.
        `curl -sS -m 20 -H "Host: evil.example" -H "X-Key: $TOKEN" https://api.bound.test:${tlsPort}/host`,
      ].join("; "),
    );
    const byUrl = (url: string) => seen.find((entry) => entry.url.startsWith(url));
    expect(byUrl("/unbound")?.authorization).toMatch(/^Bearer keel-placeholder-TOKEN-/);
    expect(byUrl("/plain")?.authorization).toMatch(/^Bearer keel-placeholder-TOKEN-/);
    expect(byUrl("/query")?.url).toMatch(/token=keel-placeholder-TOKEN-/);
    expect(byUrl("/query")?.body).toMatch(/^token=keel-placeholder-TOKEN-/);
    expect(byUrl("/host")?.host).toBe(`api.bound.test:${tlsPort}`);
    expect(byUrl("/host")?.headers["x-key"]).toBe(value);
    for (const entry of seen.filter((e) => !e.url.startsWith("/host")))
      expect(JSON.stringify(entry)).not.toContain(value);
  });

  test("the value is nowhere in the sandbox: environment, /proc, readable files", async () => {
    // The command names the value only reversed, so its own command line does not hold it.
    const reversed = [...value].reverse().join("");
    const text = await bash(
      [
        `pat=$(echo ${reversed} | rev)`,
        `curl -sS -m 20 -H "Authorization: Bearer $TOKEN" https://api.bound.test:${tlsPort}/again > /tmp/answer`,
        'echo "env:$(env | grep -cF -- "$pat")"',
        `echo "environ:$(cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -cF -- "$pat")"`,
        'echo "files:$(grep -rlsF --exclude-dir=proc --exclude-dir=dev --exclude-dir=sys --exclude-dir=usr -- "$pat" / | wc -l)"',
        'echo "workspace-tmp:$(grep -rlsF -- "$pat" /tmp /workspace /run | wc -l)"',
        // The search finds the value where it is: a file written with it, and its placeholder in env.
        'echo "$pat" > /tmp/control; echo "control:$(grep -rlsF --exclude-dir=proc --exclude-dir=dev --exclude-dir=sys --exclude-dir=usr -- "$pat" / | wc -l)"',
        'echo "placeholder-in-env:$(env | grep -c "^TOKEN=keel-placeholder-TOKEN-")"',
      ].join("\n"),
    );
    expect(text).toContain("env:0");
    expect(text).toContain("environ:0");
    expect(text).toContain("files:0");
    expect(text).toContain("workspace-tmp:0");
    expect(text).toContain("control:1");
    expect(text).toContain("placeholder-in-env:1");
    expect(seen[0]?.authorization).toBe(`Bearer ${value}`);
  });

  test("an upstream whose certificate the proxy does not trust is refused with 502 and a refusal line", async () => {
    const text = await bash(
      `curl -sS -m 20 -o /dev/null -w "status=%{http_code}\\n" -H "Authorization: Bearer $TOKEN" https://untrusted.bound.test:${untrustedPort}/x`,
    );
    expect(text).toContain("status=502");
    expect(text).toContain(
      `[network: untrusted.bound.test:${untrustedPort} refused: the host's certificate is not trusted]`,
    );
    expect(seen).toEqual([]);
  });

  test("the proxy's socket cannot be removed, moved or replaced, and its folder cannot be written", async () => {
    const text = await bash(
      [
        "rm -f /run/keel-egress/proxy.sock && echo removed",
        "mv /run/keel-egress/proxy.sock /tmp/moved && echo moved",
        "ln -sf /tmp/other.sock /run/keel-egress/proxy.sock && echo linked",
        "touch /run/keel-egress/new && echo created",
        "mv /run/keel-egress /run/elsewhere && echo folder-moved",
        "echo x > /run/keel-egress/ca-bundle.pem && echo ca-written",
        "echo x > /etc/ssl/certs/ca-certificates.crt && echo bundle-written",
        `curl -sS -m 20 -H "Authorization: Bearer $TOKEN" https://api.bound.test:${tlsPort}/after`,
      ].join("; "),
    );
    for (const word of [
      "removed",
      "moved",
      "linked",
      "created",
      "folder-moved",
      "ca-written",
      "bundle-written",
    ])
      expect(text.split("\n")).not.toContain(word);
    expect(text).toContain("stand-in says hi");
    expect(seen.find((entry) => entry.url === "/after")?.authorization).toBe(`Bearer ${value}`);
  });

  test('"full" with secrets is refused; "none" with secrets reaches only the secrets\' hosts', async () => {
    try {
      sandbox.ctx.sandbox = { ...policy, network: "full", fullNetwork: "on" };
      const full = await sandbox.run("bash", { command: "echo ran" });
      expect(full.isError).toBe(true);
      expect(textOf(full)).toContain('names tenant secrets and asks for network "full"');
      expect(textOf(full)).not.toContain("ran\n");

      sandbox.ctx.sandbox = { ...policy, network: "none" };
      const text = await bash(
        `curl -sS -m 20 -H "Authorization: Bearer $TOKEN" https://api.bound.test:${tlsPort}/none; echo; curl -sS -k -m 20 https://other.test:${tlsPort}/other`,
      );
      expect(text).toContain("stand-in says hi");
      expect(text).toContain(
        `[network: other.test:${tlsPort} refused: the host is not on the run's network allowlist]`,
      );
      expect(seen.map((entry) => entry.url)).toEqual(["/none"]);
      expect(seen[0]?.authorization).toBe(`Bearer ${value}`);
    } finally {
      sandbox.ctx.sandbox = policy;
    }
  });
});
