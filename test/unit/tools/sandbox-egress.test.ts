/**
 * A run's network allowlist, through the real sandbox and its egress proxy: the sandbox reaches
 * the proxy and nothing else (not the worker's loopback services, not any address directly); a
 * host the list does not name, an address, and a listed name that does not resolve are refused by
 * the proxy and named at the end of the call's result. (The proxy's own rules, including a listed
 * name that resolves to an internal address, are tested in egress-proxy.test.ts.) The proxy's
 * socket is bound alone and read-only: it cannot be removed, and nothing can be written beside it.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { DEFAULT_SANDBOX_POLICY, probeSandbox } from "../../../src/tools/sandbox";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

const canRun = probeSandbox().ok;
const maybe = canRun ? describe : describe.skip;

maybe("network allowlist", () => {
  let sandbox: Sandbox;
  let server: Server;
  let port: number;
  let hits = 0;

  beforeAll(async () => {
    server = createServer((_request, response) => {
      hits++;
      response.end("worker loopback secret");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
    sandbox = await makeSandbox({
      ...DEFAULT_SANDBOX_POLICY,
      network: { allow: ["allowed.invalid", `loopback.invalid:${port}`] },
    });
  });
  afterAll(async () => {
    await removeSandbox(sandbox);
    await new Promise((resolve) => server.close(resolve));
  });

  const bash = async (command: string) => textOf(await sandbox.run("bash", { command, timeout: 30 }));

  test("the proxy is reached, and refuses a host the list does not name", async () => {
    const text = await bash(
      "curl -sS -m 10 https://not-listed.example.org/ 2>&1; echo; env | grep -i _proxy= | sort",
    );
    expect(text).toMatch(/403/);
    expect(text).toContain("https_proxy=http://127.0.0.1:3128");
    expect(text).toContain(
      "[network: not-listed.example.org:443 refused: the host is not on the run's network allowlist]",
    );
  });

  test("the sandbox sees the proxy's socket alone, read-only, and no call CA without secrets", async () => {
    const text = await bash(
      [
        "ls -A /run/keel-egress",
        "rm -f /run/keel-egress/proxy.sock 2>/dev/null || echo rm-refused",
        "touch /run/keel-egress/x 2>/dev/null || echo write-refused",
        'echo "ca-vars:$(env | grep -c -e SSL_CERT_FILE -e NODE_EXTRA_CA_CERTS -e GIT_SSL_CAINFO)"',
        "curl -sS -m 10 https://not-listed.example.org/ 2>&1 | head -c 0",
      ].join("; "),
    );
    expect(text.split("\n").slice(0, 4)).toEqual(["proxy.sock", "rm-refused", "write-refused", "ca-vars:0"]);
    // The proxy still answers after the attempts.
    expect(text).toContain("[network: not-listed.example.org:443 refused:");
  });

  test("an address, even the worker's own loopback, is refused by the proxy and unreachable directly", async () => {
    const text = await bash(
      `curl -sS -m 10 http://127.0.0.1:${port}/ 2>&1; echo; curl -sS -m 5 --noproxy '*' http://127.0.0.1:${port}/ 2>&1; echo; curl -sS -m 5 --noproxy '*' http://169.254.169.254/ 2>&1`,
    );
    expect(text).not.toContain("worker loopback secret");
    expect(text).toContain(
      `[network: 127.0.0.1:${port} refused: addresses cannot be allowlisted; use a host name]`,
    );
    expect(hits).toBe(0);
  });

  test("a listed name that does not resolve is refused, and nothing is reached", async () => {
    const text = await bash(`curl -sS -m 10 http://loopback.invalid:${port}/ 2>&1`);
    expect(text).toContain(`[network: loopback.invalid:${port} refused: the host name does not resolve]`);
    expect(hits).toBe(0);
  });
});
