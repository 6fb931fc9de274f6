/** The Temporal CLI dev server (`temporal server start-dev`), with its web UI, on loopback ports. */
import { join } from "node:path";
import { keelSearchAttributes } from "../../workflows/search-attributes";
import { freePorts, startOnFreePorts, waitForPort } from "./ports";
import { type ServiceProcess, startServiceProcess } from "./service-process";
import { toolPaths } from "./tools";

export interface TemporalDevServer {
  /** gRPC frontend, host:port. */
  address: string;
  namespace: string;
  uiUrl: string;
  /** Prometheus `/metrics` endpoint (the server's `action` counter among others). */
  metricsUrl: string;
  process: ServiceProcess;
  /**
   * gRPC and UI ports. With the same data folder (and `persist`) and the gRPC port passed back,
   * it restarts on its database at the same address; the UI port may be picked again.
   */
  ports: { grpc: number; ui: number };
}

export interface TemporalDevServerOptions {
  /** Folder for the log file and (when `persist`) the SQLite database. */
  dataDir: string;
  /** Keep state in `dataDir/temporal.sqlite` across restarts; otherwise in memory. */
  persist?: boolean;
  port?: number;
  uiPort?: number;
  namespace?: string;
  /** Dispatch tasks by fairness key (default true; the tenant-fairness benchmark compares off). */
  fairness?: boolean;
}

/**
 * The dev server runs a single history shard, and each shard's transfer and visibility queues
 * are read at most 20 times a second by default (`history.*ProcessorMaxPollRPS`). A cluster
 * spreads that limit over hundreds of shards; on one shard it holds every task that is not
 * dispatched eagerly (an activity on another task queue, a workflow task after an activity)
 * for about 40 ms, which no deployment sees. The local stack lifts the limit.
 */
const DEV_SERVER_DYNAMIC_CONFIG = [
  "history.transferProcessorMaxPollRPS=1000",
  "history.visibilityProcessorMaxPollRPS=1000",
];

/**
 * Tenants share the task queues fairly: tasks are dispatched by their fairness key (the tenant,
 * run-client/fairness.ts) in proportion to its weight, not in arrival order.
 */
const FAIRNESS_DYNAMIC_CONFIG = "matching.enableFairness=true";

export function startTemporalDevServer(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  // With the gRPC port given and the UI port free, a collision on the UI or metrics port is
  // retried on new ones (the gRPC port stays what the caller's clients use).
  const fixed = options.port !== undefined && options.uiPort !== undefined;
  return startOnFreePorts(fixed, () => startTemporalDevServerOnce(options));
}

async function startTemporalDevServerOnce(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const [freeGrpc, freeUi, metricsPort] = await freePorts(3);
  const port = options.port ?? freeGrpc!;
  const uiPort = options.uiPort ?? freeUi!;
  const namespace = options.namespace ?? "default";
  const args = [
    "server",
    "start-dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--ui-port",
    String(uiPort),
    "--metrics-port",
    String(metricsPort),
    "--namespace",
    namespace,
    "--log-level",
    "warn",
    "--log-format",
    "json",
    ...[
      ...DEV_SERVER_DYNAMIC_CONFIG,
      ...(options.fairness === false ? [] : [FAIRNESS_DYNAMIC_CONFIG]),
    ].flatMap((setting) => ["--dynamic-config-value", setting]),
    ...keelSearchAttributes.flatMap((key) => ["--search-attribute", `${key.name}=Keyword`]),
    ...(options.persist ? ["--db-filename", join(options.dataDir, "temporal.sqlite")] : []),
  ];
  const process = startServiceProcess("temporal", toolPaths().temporal, args, {
    logFile: join(options.dataDir, "temporal.log"),
  });
  try {
    await waitForPort(port, 60_000, process.isAlive);
    await waitForPort(uiPort, 60_000, process.isAlive);
  } catch (error) {
    await process.stop();
    throw new Error(
      `Temporal dev server did not start (${(error as Error).message}); see ${process.logFile}`,
    );
  }
  return {
    address: `127.0.0.1:${port}`,
    namespace,
    uiUrl: `http://127.0.0.1:${uiPort}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    process,
    ports: { grpc: port, ui: uiPort },
  };
}
