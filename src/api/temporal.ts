/**
 * The API's Temporal connection: created lazily on first use, once per process (one per Lambda
 * container), and re-created after a failure. A Lambda container frozen between invocations can
 * wake up with a dead connection; the first call that fails with a connection-level error drops
 * it, so the next request connects afresh instead of failing forever.
 */

import { Client, Connection } from "@temporalio/client";
import type { DataConverter } from "@temporalio/common";
import { type TemporalSettings, temporalConnectOptions } from "../core/temporal-settings";
import { clientInterceptors } from "../run-client/client-interceptors";
import { RunClient } from "../run-client/run-client";
import { clientTelemetryOptions } from "../telemetry/client";

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

/** One Temporal connection and the calls in flight on it. */
interface LiveConnection {
  connection: Connection;
  /** The run client; every call through it is counted in `inFlight`. */
  runs: RunClient;
  inFlight: number;
  /** Replaced after a failure: closed as soon as no call is in flight on it. */
  retired: boolean;
}

/**
 * The API's run client over a lazily made connection. After a connection failure the connection
 * is replaced for new requests, and the old one is closed only once no call is in flight on it:
 * closing a gRPC channel under a call that is waiting in the client's retry timer makes that
 * timer throw ("Channel has been shut down") outside any request, which would crash the process.
 */
export class LazyRunClient {
  private current: Promise<LiveConnection> | undefined;

  constructor(
    private readonly settings: TemporalSettings,
    private readonly taskQueue: string,
    private readonly dataConverter?: DataConverter,
    /** See `RunClient`'s `apiPublicUrl`. */
    private readonly apiPublicUrl?: string,
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

  /**
   * Replaces the connection when `error` says it failed: the next `get()` reconnects; the old
   * connection is closed once the calls still running on it have settled.
   */
  reportFailure(error: unknown): void {
    if (!this.current || !isConnectionFailure(error)) return;
    const stale = this.current;
    this.current = undefined;
    void stale.then(
      (live) => {
        live.retired = true;
        closeWhenIdle(live);
      },
      () => undefined,
    );
  }

  async close(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    if (current) await (await current).connection.close();
  }

  private async connect(): Promise<LiveConnection> {
    const connection = await Connection.connect({
      ...temporalConnectOptions(this.settings),
      interceptors: clientInterceptors(),
    }).catch((error: unknown) => {
      throw new TemporalConnectError(this.settings.address, { cause: error });
    });
    const client = new Client({
      connection,
      namespace: this.settings.namespace,
      ...(this.dataConverter ? { dataConverter: this.dataConverter } : {}),
      ...clientTelemetryOptions(),
    });
    const live: LiveConnection = {
      connection,
      runs: new RunClient(client, this.taskQueue, this.apiPublicUrl),
      inFlight: 0,
      retired: false,
    };
    live.runs = countingCalls(live);
    return live;
  }
}

function closeWhenIdle(live: LiveConnection): void {
  if (live.retired && live.inFlight === 0) void live.connection.close().catch(() => undefined);
}

/**
 * `live.runs` with every method call that returns a promise counted in `live.inFlight` until it
 * settles (the gRPC calls and their retry timers all run inside those promises).
 */
function countingCalls(live: LiveConnection): RunClient {
  const target = live.runs;
  return new Proxy(target, {
    get(object, property, receiver) {
      const value: unknown = Reflect.get(object, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const result: unknown = value.apply(object, args);
        if (!(result instanceof Promise)) return result;
        live.inFlight += 1;
        return result.finally(() => {
          live.inFlight -= 1;
          closeWhenIdle(live);
        });
      };
    },
  });
}
