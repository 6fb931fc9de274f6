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
  reset(): void;
  close(): Promise<void>;
}

/** `GET object`, `GET list`, `PUT object`, `HEAD object`, … */
function kindOf(method: string, url: string): string {
  const query = new URL(url, "http://proxy").searchParams;
  return `${method} ${query.has("list-type") || query.has("prefix") ? "list" : "object"}`;
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  let counts: Record<string, RequestTally> = {};
  const server = createServer((incoming, outgoing) => {
    const kind = kindOf(incoming.method ?? "GET", incoming.url ?? "/");
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
    reset() {
      counts = {};
    },
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
