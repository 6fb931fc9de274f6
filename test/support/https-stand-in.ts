/**
 * A local HTTPS server standing in for a public host that a tenant secret is bound to: its
 * certificates (one per name asked for by SNI) come from a CA of the test's own, which the test
 * gives the egress proxy (`extraCaPem`) or a client as a public CA would be trusted.
 */
import type { RequestListener } from "node:http";
import type { Server } from "node:https";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { type CallCa, createCallCa } from "../../src/tools/egress-tls";

export interface HttpsStandIn {
  server: Server;
  /** Its port on 127.0.0.1. */
  port: number;
  /** The CA its certificates come from, PEM. */
  caPem: string;
  close(): Promise<void>;
}

/** Starts the stand-in on 127.0.0.1 with a new CA, or `ca` (several stand-ins trusted alike). */
export async function startHttpsStandIn(handler: RequestListener, ca?: CallCa): Promise<HttpsStandIn> {
  const issuer = ca ?? (await createCallCa([]));
  const server = https.createServer(
    {
      SNICallback: (name, done) =>
        issuer.contextFor(name).then(
          (context) => done(null, context),
          (error: Error) => done(error),
        ),
    },
    handler,
  );
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    caPem: issuer.certificatePem,
    close: () =>
      new Promise<void>((closed) => {
        server.closeAllConnections();
        server.close(() => closed());
      }),
  };
}
