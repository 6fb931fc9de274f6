/**
 * Jaeger (v2, built by scripts/ensure-jaeger.mjs into .keel/tools/jaeger) as the local trace
 * receiver: OTLP over HTTP in, traces kept in memory, its UI and query API on one port. Metrics
 * sent to the same OTLP endpoint go to a Prometheus exporter (the OpenTelemetry Collector's, built
 * into Jaeger) whose `/metrics` page shows them. Everything binds to loopback on free ports (or the
 * given ones), so a dev stack and tests run side by side.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePorts, startOnFreePorts, waitForPort } from "./ports";
import { type ServiceProcess, startServiceProcess } from "./service-process";
import { projectRoot } from "./tools";

export interface JaegerServer {
  /** The OTLP/HTTP base URL (KEEL_OTEL_ENDPOINT). */
  otlpEndpoint: string;
  /** Jaeger's UI; its query API is under `/api`. */
  uiUrl: string;
  /** The Prometheus page of the metrics received over OTLP. */
  metricsUrl: string;
  process: ServiceProcess;
}

export interface JaegerOptions {
  /** Where its configuration and log go. */
  dataDir: string;
  /** The UI's port (default: a free one). */
  uiPort?: number;
}

/** The binary: KEEL_JAEGER_BIN, or the one `npm run ensure` builds. */
export function jaegerBinary(env: NodeJS.ProcessEnv = process.env): string {
  const path = env.KEEL_JAEGER_BIN ?? join(projectRoot, ".keel/tools/jaeger/jaeger");
  if (!existsSync(path))
    throw new Error(
      `Jaeger not found at ${path}; install Go 1.24+ and run \`npm run ensure\` (it builds Jaeger into .keel/tools/jaeger), or set KEEL_JAEGER_BIN.`,
    );
  return path;
}

function config(ports: {
  otlp: number;
  ui: number;
  queryGrpc: number;
  metrics: number;
  health: number;
}): string {
  return `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
    metrics:
      receivers: [otlp]
      exporters: [prometheus]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:${ports.health}
  jaeger_query:
    storage:
      traces: memory_store
    http:
      endpoint: 127.0.0.1:${ports.ui}
    grpc:
      endpoint: 127.0.0.1:${ports.queryGrpc}
  jaeger_storage:
    backends:
      memory_store:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${ports.otlp}
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memory_store
  prometheus:
    endpoint: 127.0.0.1:${ports.metrics}
`;
}

/** Starts Jaeger and resolves once its OTLP receiver and UI accept connections. */
export function startJaeger(options: JaegerOptions): Promise<JaegerServer> {
  return startOnFreePorts(options.uiPort !== undefined, () => startJaegerOnce(options));
}

async function startJaegerOnce(options: JaegerOptions): Promise<JaegerServer> {
  const binary = jaegerBinary();
  const [otlp, ui, queryGrpc, metrics, health] = (await freePorts(5)) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const ports = { otlp, ui: options.uiPort ?? ui, queryGrpc, metrics, health };
  const configFile = join(options.dataDir, "jaeger.yaml");
  writeFileSync(configFile, config(ports));
  const process = startServiceProcess("jaeger", binary, [`--config=${configFile}`], {
    logFile: join(options.dataDir, "jaeger.log"),
    // Jaeger would export its own traces to localhost:4317 (nobody's there): off.
    env: { PATH: globalThis.process.env.PATH, OTEL_TRACES_EXPORTER: "none" },
  });
  try {
    for (const port of [ports.otlp, ports.ui, ports.metrics])
      await waitForPort(port, 60_000, process.isAlive);
  } catch (error) {
    await process.stop();
    throw new Error(`Jaeger did not start (${(error as Error).message}); see ${process.logFile}`);
  }
  return {
    otlpEndpoint: `http://127.0.0.1:${ports.otlp}`,
    uiUrl: `http://127.0.0.1:${ports.ui}`,
    metricsUrl: `http://127.0.0.1:${ports.metrics}/metrics`,
    process,
  };
}
