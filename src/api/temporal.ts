/**
 * The API's Temporal connection: created lazily on first use, once per process (one per Lambda
 * container), and re-created after a failure. A Lambda container frozen between invocations can
 * wake up with a dead connection; the first call that fails with a connection-level error drops
 * it, so the next request connects afresh instead of failing forever.
 */

import { Client, Connection } from "@temporalio/client";
import type { DataConverter } from "@temporalio/common";
import { RunClient } from "./run-client";

export interface TemporalSettings {
  address: string;
  namespace: string;
  apiKey?: string;
}

/** gRPC status codes that mean the connection (not the request) failed. */
const CONNECTION_FAILURE_CODES = new Set([
  4, // DEADLINE_EXCEEDED
  14, // UNAVAILABLE
]);

/**
 * Connecting to Temporal failed. The client reports an unreachable server as a plain error
 * ("Failed to connect before the deadline"), so the connect step names it.
 */
export class TemporalConnectError extends Error {
  constructor(address: string, options: { cause: unknown }) {
    super(`cannot connect to Temporal at ${address}`, options);
    this.name = "TemporalConnectError";
  }
}

/** True for errors that say the connection is unusable (unreachable server, dead channel). */
export function isConnectionFailure(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if (current instanceof TemporalConnectError) return true;
    const code = (current as { code?: unknown }).code;
    if (typeof code === "number" && CONNECTION_FAILURE_CODES.has(code)) return true;
    const name = (current as { name?: unknown }).name;
    if (name === "TransportError") return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

export class LazyRunClient {
  private current: Promise<{ connection: Connection; runs: RunClient }> | undefined;

  constructor(
    private readonly settings: TemporalSettings,
    private readonly taskQueue: string,
    private readonly dataConverter?: DataConverter,
  ) {}

  /** The run client over the live connection, connecting first when there is none. */
  async get(): Promise<RunClient> {
    this.current ??= this.connect();
    try {
      return (await this.current).runs;
    } catch (error) {
      this.current = undefined;
      throw error;
    }
  }

  /** Drops the connection when `error` says it failed; the next `get()` reconnects. */
  reportFailure(error: unknown): void {
    if (!this.current || !isConnectionFailure(error)) return;
    const stale = this.current;
    this.current = undefined;
    void stale.then(
      ({ connection }) => connection.close().catch(() => undefined),
      () => undefined,
    );
  }

  async close(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    if (current) await (await current).connection.close();
  }

  private async connect() {
    const connection = await Connection.connect({
      address: this.settings.address,
      ...(this.settings.apiKey ? { tls: true, apiKey: this.settings.apiKey } : {}),
    }).catch((error: unknown) => {
      throw new TemporalConnectError(this.settings.address, { cause: error });
    });
    const client = new Client({
      connection,
      namespace: this.settings.namespace,
      ...(this.dataConverter ? { dataConverter: this.dataConverter } : {}),
    });
    return { connection, runs: new RunClient(client, this.taskQueue) };
  }
}
