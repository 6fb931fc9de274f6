/**
 * An HTTP proxy in front of the S3 server that counts requests by kind, so a benchmark can say
 * how many S3 round trips a turn costs. Requests are forwarded unchanged (the Host header
 * included, so SigV4 signatures still verify).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { forwardHttp } from "../../test/support/forward-http";

export interface RequestTally {
  count: number;
  /** Summed request → response end time, ms. */
  totalMs: number;
}

export interface CountingProxy {
  endpoint: string;
  counts(): Record<string, RequestTally>;
  /** Request counts by kind and the key's area (`PUT object usage`, `GET list sessions/…`). */
  countsByArea(): Record<string, number>;
  reset(): void;
  close(): Promise<void>;
}

/** `GET object`, `GET list`, `PUT object`, `HEAD object`, … */
function kindOf(method: string, url: string): string {
  const query = new URL(url, "http://proxy").searchParams;
  return `${method} ${query.has("list-type") || query.has("prefix") ? "list" : "object"}`;
}

/**
 * What a request's key is for, from Keel's S3 key layout: the folder under the tenant
 * (`usage`, `quota`, `settings.json`, …), a session's part (`sessions/entries`, `sessions/header.json`,
 * `sessions/chunks`, …) or the top folder (`idempotency`, …). A listing is named by its prefix.
 */
function areaOf(url: string): string {
  const parsed = new URL(url, "http://proxy");
  const listed = parsed.searchParams.get("prefix");
  // Path style: /{bucket}/{key}.
  const key = listed ?? decodeURIComponent(parsed.pathname).split("/").slice(2).join("/");
  const parts = key.split("/");
  if (parts[0] !== "tenants") return parts[0] || "(bucket)";
  if (parts[2] === "sessions") return `sessions/${parts[4] || "(session)"}`;
  return parts[2] || "(tenant)";
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  let counts: Record<string, RequestTally> = {};
  let byArea: Record<string, number> = {};
  const server = createServer((incoming, outgoing) => {
    const kind = kindOf(incoming.method ?? "GET", incoming.url ?? "/");
    const area = `${kind} ${areaOf(incoming.url ?? "/")}`;
    byArea[area] = (byArea[area] ?? 0) + 1;
    const tally = counts[kind] ?? { count: 0, totalMs: 0 };
    counts[kind] = tally;
    tally.count += 1;
    const started = performance.now();
    outgoing.on("finish", () => {
      tally.totalMs += performance.now() - started;
    });
    forwardHttp(upstream, incoming, outgoing);
  });
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    counts: () => ({ ...counts }),
    countsByArea: () => ({ ...byArea }),
    reset() {
      counts = {};
      byArea = {};
    },
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
