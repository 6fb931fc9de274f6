/**
 * An HTTP proxy in front of the real S3 server that answers a share of requests with
 * `503 SlowDown` (or drops the connection) instead of forwarding them: S3 having a bad minute.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { seededRandom } from "../../src/core/ids";
import { forwardHttp } from "./forward-http";

export interface S3FaultProxy {
  endpoint: string;
  /** Requests answered with a fault so far. */
  faults(): number;
  /** Requests forwarded so far. */
  forwarded(): number;
  setFailureRate(rate: number): void;
  /** Stops listening (connections are refused, as with an S3 server that is down). */
  goDown(): Promise<void>;
  /** Listens again on the same port. */
  comeBack(): Promise<void>;
  close(): Promise<void>;
}

export async function startS3FaultProxy(
  target: string,
  failureRate: number,
  seed = 1,
): Promise<S3FaultProxy> {
  const upstream = new URL(target);
  let rate = failureRate;
  const random = seededRandom(seed);
  let faults = 0;
  let forwarded = 0;
  const server: Server = createServer((incoming, outgoing) => {
    if (random() < rate) {
      faults += 1;
      incoming.resume();
      if (faults % 4 === 0) {
        outgoing.socket?.destroy(); // a dropped connection
        return;
      }
      outgoing.writeHead(503, { "content-type": "application/xml" });
      outgoing.end("<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>");
      return;
    }
    forwarded += 1;
    forwardHttp(upstream, incoming, outgoing);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    faults: () => faults,
    forwarded: () => forwarded,
    setFailureRate: (next) => {
      rate = next;
    },
    goDown: () => stop(server),
    comeBack: () => new Promise<void>((done) => server.listen(port, "127.0.0.1", done)),
    close: () => (server.listening ? stop(server) : Promise.resolve()),
  };
}

function stop(server: Server): Promise<void> {
  return new Promise<void>((done) => {
    server.closeAllConnections();
    server.close(() => done());
  });
}
