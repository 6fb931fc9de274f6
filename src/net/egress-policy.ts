/**
 * Which network addresses outbound connections named by an API caller may reach. A caller can
 * name URLs (a one-line model's base URL, a git workspace source); without this policy those
 * would reach the worker's own network: loopback services, the cloud metadata endpoint
 * (169.254.169.254), the ECS credentials endpoint (169.254.170.2), private ranges.
 *
 * `classifyAddress` is the pure rule. `guardedLookup` applies it where it cannot be raced: as the
 * `lookup` of the connection itself, so the addresses checked are the addresses connected to
 * (a name that resolves to a public address when checked and to 127.0.0.1 when connected,
 * DNS rebinding, gets nowhere). Hosts the operator named are exempt: an operator may run a model
 * server or a git server on a private address on purpose.
 */
import * as dns from "node:dns";
import { isIP, isIPv4, isIPv6, type LookupFunction } from "node:net";

/** What kind of address an IP address is; only "public" ones are reachable without the operator's say. */
export type AddressClass =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "link-local"
  | "shared"
  | "multicast"
  | "reserved";

/** An IPv4 range as [first octets as a 32-bit number, prefix length, class]. */
type Range4 = readonly [string, number, AddressClass];

const IPV4_RANGES: readonly Range4[] = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "shared"], // carrier-grade NAT
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"], // metadata 169.254.169.254, ECS credentials 169.254.170.2
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"],
  ["192.0.2.0", 24, "reserved"],
  ["192.88.99.0", 24, "reserved"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "reserved"],
  ["198.51.100.0", 24, "reserved"],
  ["203.0.113.0", 24, "reserved"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"], // includes 255.255.255.255
];

function ipv4Number(address: string): number {
  return address.split(".").reduce((value, octet) => value * 256 + Number(octet), 0);
}

function classifyIpv4(address: string): AddressClass {
  const value = ipv4Number(address);
  for (const [base, prefix, kind] of IPV4_RANGES) {
    const size = 2 ** (32 - prefix);
    if (Math.floor(value / size) === Math.floor(ipv4Number(base) / size)) return kind;
  }
  return "public";
}

/** The 8 16-bit groups of an IPv6 address (valid per `isIPv6`, zone id already removed). */
function ipv6Groups(address: string): number[] {
  let text = address;
  // A trailing dotted quad (::ffff:1.2.3.4) stands for the last two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const value = ipv4Number(dotted[1]!);
    text = `${text.slice(0, dotted.index)}${Math.floor(value / 65536).toString(16)}:${(value % 65536).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const parse = (part: string) =>
    part === "" ? [] : part.split(":").map((group) => Number.parseInt(group, 16));
  const before = parse(head);
  if (tail === undefined) return before;
  const after = parse(tail);
  return [...before, ...new Array(8 - before.length - after.length).fill(0), ...after];
}

/** The IPv4 address held in two 16-bit groups. */
const ipv4Of = (high: number, low: number): string => [high >> 8, high & 255, low >> 8, low & 255].join(".");

function classifyIpv6(address: string): AddressClass {
  const g = ipv6Groups(address);
  const zeroUpTo = (count: number) => g.slice(0, count).every((group) => group === 0);
  if (zeroUpTo(8)) return "unspecified";
  if (zeroUpTo(7) && g[7] === 1) return "loopback";
  // IPv4-mapped ::ffff:a.b.c.d and the deprecated IPv4-compatible ::a.b.c.d: the IPv4 address.
  if (zeroUpTo(5) && g[5] === 0xffff) return classifyIpv4(ipv4Of(g[6]!, g[7]!));
  if (zeroUpTo(6)) return classifyIpv4(ipv4Of(g[6]!, g[7]!));
  // NAT64 64:ff9b::a.b.c.d reaches the IPv4 address; 64:ff9b:1::/48 is for local use.
  if (g[0] === 0x64 && g[1] === 0xff9b) {
    if (g.slice(2, 6).every((group) => group === 0)) return classifyIpv4(ipv4Of(g[6]!, g[7]!));
    return "reserved";
  }
  // 6to4 2002:a.b.c.d::/48 reaches the IPv4 address in groups 1-2.
  if (g[0] === 0x2002) return classifyIpv4(ipv4Of(g[1]!, g[2]!));
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return "private"; // fc00::/7 unique local
  if ((first & 0xffc0) === 0xfe80) return "link-local"; // fe80::/10
  if ((first & 0xffc0) === 0xfec0) return "private"; // fec0::/10 site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return "multicast";
  if (first === 0x2001 && g[1]! < 0x200) return "reserved"; // 2001::/23: Teredo, ORCHID, benchmarking
  if (first === 0x2001 && g[1] === 0xdb8) return "reserved"; // documentation
  if ((first & 0xe000) !== 0x2000) return "reserved"; // outside 2000::/3 global unicast
  return "public";
}

/**
 * The class of an IP address literal (IPv4 dotted quad, or IPv6 with or without brackets and
 * zone id). Throws for text that is not an IP address: names are resolved first (`guardedLookup`).
 */
export function classifyAddress(address: string): AddressClass {
  const bare = address.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
  if (isIPv4(bare)) return classifyIpv4(bare);
  if (isIPv6(bare)) return classifyIpv6(bare.toLowerCase());
  throw new Error(`Not an IP address: ${JSON.stringify(address)}`);
}

export const isPublicAddress = (address: string): boolean => classifyAddress(address) === "public";

/** The `code` of EgressRefusedError (checked structurally: it reaches callers wrapped by fetch and the SDKs). */
export const EGRESS_REFUSED = "EGRESS_REFUSED";

/** A connection refused by the egress policy (not retryable: the same name gets the same answer). */
export class EgressRefusedError extends Error {
  readonly code = EGRESS_REFUSED;
  constructor(host: string, address: string, kind: AddressClass) {
    const what =
      host === address ? `${host} is a ${kind} address` : `${host} resolves to ${address}, a ${kind} address`;
    super(`Refused to connect: ${what}, and the operator did not allow this host`);
    this.name = "EgressRefusedError";
  }
}

/** Whether `host` (a name or IP literal, lowercase, no brackets) may reach internal addresses. */
export type HostAllowance = (host: string) => boolean;

/** Throws EgressRefusedError unless `host` is allowed or every address is public. */
export function checkAddresses(host: string, addresses: readonly string[], allowed: HostAllowance): void {
  if (allowed(normalizeHost(host))) return;
  for (const address of addresses) {
    const kind = classifyAddress(address);
    if (kind !== "public") throw new EgressRefusedError(host, address, kind);
  }
}

/** A host name as compared against allowances: lowercase, no brackets, no trailing dot. */
export function normalizeHost(host: string): string {
  return host
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")
    .toLowerCase();
}

/**
 * A `lookup` for `net.connect`/`tls.connect` that resolves as `dns.lookup` does and fails with
 * EgressRefusedError when the host is not allowed and any address it resolves to is not public.
 * Connections to IP literals never call `lookup`: check those with `checkAddresses` first.
 */
export function guardedLookup(allowed: HostAllowance): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      try {
        checkAddresses(
          hostname,
          addresses.map((entry) => entry.address),
          allowed,
        );
      } catch (refusal) {
        return callback(refusal as NodeJS.ErrnoException, "", 0);
      }
      if (options.all) return (callback as (e: null, all: dns.LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first)
        return callback(Object.assign(new Error(`No address for ${hostname}`), { code: "ENOTFOUND" }), "", 0);
      callback(null, first.address, first.family);
    });
  };
}

/**
 * Resolves `host` and returns its addresses once they pass the policy (throws EgressRefusedError
 * otherwise). For clients that cannot take a `lookup` (git): connect to exactly these addresses.
 */
export async function resolveAllowed(host: string, allowed: HostAllowance): Promise<string[]> {
  const bare = normalizeHost(host);
  const addresses = isIP(bare)
    ? [bare]
    : (await dns.promises.lookup(bare, { all: true })).map((entry) => entry.address);
  checkAddresses(host, addresses, allowed);
  return addresses;
}
