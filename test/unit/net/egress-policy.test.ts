/**
 * The egress policy: which addresses a caller-named URL may reach. Every internal range is
 * refused in each of its spellings, and the check runs on the addresses a connection actually
 * resolves (a name resolving to loopback is refused when connecting, unless the host is allowed).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type AddressClass,
  classifyAddress,
  EgressRefusedError,
  resolveAllowed,
} from "../../../src/net/egress-policy";
import { guardedFetch } from "../../../src/net/guarded-fetch";

describe("classifyAddress", () => {
  it.each<[string, AddressClass]>([
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "link-local"], // cloud metadata
    ["169.254.170.2", "link-local"], // ECS task credentials
    ["100.64.0.1", "shared"],
    ["100.127.255.255", "shared"],
    ["192.0.0.1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:a9fe:a9fe", "link-local"],
    ["::ffff:10.1.2.3", "private"],
    ["::127.0.0.1", "loopback"], // IPv4-compatible (deprecated)
    ["64:ff9b::a9fe:a9fe", "link-local"], // NAT64 of 169.254.169.254
    ["64:ff9b:1::1", "reserved"],
    ["2002:7f00:1::", "loopback"], // 6to4 of 127.0.0.1
    ["2002:a9fe:aa02::1", "link-local"], // 6to4 of 169.254.170.2
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf::1", "link-local"],
    ["fec0::1", "private"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "reserved"],
    ["2001::1", "reserved"], // Teredo
    ["100::1", "reserved"],
    ["8.8.8.8", "public"],
    ["1.1.1.1", "public"],
    ["172.32.0.1", "public"],
    ["100.128.0.1", "public"],
    ["169.253.255.255", "public"],
    ["2606:4700:4700::1111", "public"],
    ["2a00:1450:4001::200e", "public"],
    ["::ffff:8.8.8.8", "public"],
  ])("%s is %s", (address, kind) => expect(classifyAddress(address)).toBe(kind));

  it("refuses to classify a name", () => {
    expect(() => classifyAddress("localhost")).toThrow(/Not an IP address/);
  });

  // The URL parser turns every IPv4 spelling into the dotted quad the rule sees.
  it.each([
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.1/",
    "http://0177.0.0.1/",
    "http://127.1/",
    "http://017700000001/",
    "http://[::ffff:127.0.0.1]/",
    "http://[0:0:0:0:0:ffff:7f00:1]/",
  ])("%s is loopback once parsed", (url) => {
    expect(classifyAddress(new URL(url).hostname)).toBe("loopback");
  });

  it.each(["http://2852039166/", "http://0xa9.0xfe.0xa9.0xfe/", "http://0251.0376.0251.0376/"])(
    "%s is the metadata address once parsed",
    (url) => expect(classifyAddress(new URL(url).hostname)).toBe("link-local"),
  );
});

describe("at connection time", () => {
  let server: Server;
  let port: number;
  const hits: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.url ?? "");
      if (req.url === "/redirect") {
        res.writeHead(302, { location: `http://localhost:${port}/after-redirect` }).end();
        return;
      }
      res.end("reached");
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));
  beforeEach(() => {
    hits.length = 0;
  });

  const causeOf = (error: unknown): unknown => (error as { cause?: unknown }).cause;

  it("a name resolving to loopback is refused when connecting, and nothing is sent", async () => {
    const error = await guardedFetch(() => false)(`http://localhost:${port}/x`).catch((e: unknown) => e);
    expect(causeOf(error)).toBeInstanceOf(EgressRefusedError);
    expect(String(causeOf(error))).toMatch(/localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
    expect(hits).toEqual([]);
  });

  it("an IP literal is checked too (no lookup happens for it)", async () => {
    const error = await guardedFetch(() => false)(`http://127.0.0.1:${port}/x`).catch((e: unknown) => e);
    expect(causeOf(error)).toBeInstanceOf(EgressRefusedError);
    const mapped = await guardedFetch(() => false)(`http://[::ffff:127.0.0.1]:${port}/x`).catch(
      (e: unknown) => e,
    );
    expect(causeOf(mapped)).toBeInstanceOf(EgressRefusedError);
    expect(hits).toEqual([]);
  });

  it("an allowed host reaches its internal address", async () => {
    const response = await guardedFetch((host) => host === "localhost")(`http://localhost:${port}/x`);
    expect(await response.text()).toBe("reached");
  });

  it("a redirect from an allowed host to a host that is not allowed is refused", async () => {
    const fetch = guardedFetch((host) => host === "127.0.0.1");
    const error = await fetch(`http://127.0.0.1:${port}/redirect`).catch((e: unknown) => e);
    expect(causeOf(error)).toBeInstanceOf(EgressRefusedError);
    expect(hits).toEqual(["/redirect"]);
  });

  it("resolveAllowed returns the checked addresses, or refuses", async () => {
    await expect(resolveAllowed("localhost", () => false)).rejects.toBeInstanceOf(EgressRefusedError);
    await expect(resolveAllowed("127.0.0.1", () => false)).rejects.toBeInstanceOf(EgressRefusedError);
    await expect(resolveAllowed("8.8.8.8", () => false)).resolves.toEqual(["8.8.8.8"]);
    expect(await resolveAllowed("localhost", (host) => host === "localhost")).not.toHaveLength(0);
  });
});
