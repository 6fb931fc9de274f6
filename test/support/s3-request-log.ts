/**
 * An HTTP proxy in front of the real S3 server that forwards every request unchanged and keeps
 * the method and path of each, in arrival order: which objects a worker read and wrote, and when.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { forwardHttp } from "./forward-http";

export interface S3Request {
  method: string;
  /** Decoded path (path-style: `/<bucket>/<key>`), without the query. */
  path: string;
  /** The `prefix` of a LIST request (decoded), absent for other requests. */
  listPrefix?: string;
}

export interface S3RequestLog {
  endpoint: string;
  requests(): S3Request[];
  close(): Promise<void>;
}

export async function startS3RequestLog(target: string): Promise<S3RequestLog> {
  const upstream = new URL(target);
  const requests: S3Request[] = [];
  const server = createServer((incoming, outgoing) => {
    const url = new URL(incoming.url ?? "/", "http://proxy");
    const listPrefix = url.searchParams.get("prefix") ?? undefined;
    requests.push({
      method: incoming.method ?? "GET",
      path: decodeURIComponent(url.pathname),
      ...(listPrefix !== undefined ? { listPrefix } : {}),
    });
    forwardHttp(upstream, incoming, outgoing);
  });
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests: () => [...requests],
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
