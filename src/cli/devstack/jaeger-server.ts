/**
 * Jaeger (v2, built by scripts/ensure-jaeger.mjs into .keel/tools/jaeger when first needed) as the local trace
 * receiver: OTLP over HTTP in, traces kept in memory, its UI and query API on one port. Metrics
 * sent to the same OTLP endpoint go to a Prometheus exporter (the OpenTelemetry Collector's, built
 * into Jaeger) whose `/metrics` page shows them. Everything binds to loopback on free ports (or the
 * given ones), so a dev stack and tests run side by side.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
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

const JAEGER_DIR = join(projectRoot, ".keel/tools/jaeger");
const JAEGER_MODULE = "github.com/jaegertracing/jaeger";
/** The longest a first build may take: about 13 minutes on a 2-core machine, far more under load. */
export const JAEGER_BUILD_TIMEOUT_MS = 60 * 60_000;

/**
 * Whether Jaeger must be built before it can start: KEEL_JAEGER_BIN is unset and the pinned
 * version (scripts/tool-versions.json) is not in place, as scripts/ensure-jaeger.mjs stamps it.
 */
export function jaegerNeedsBuild(env: NodeJS.ProcessEnv): boolean {
  if (env.KEEL_JAEGER_BIN) return false;
  const versions = JSON.parse(readFileSync(join(projectRoot, "scripts/tool-versions.json"), "utf8")) as {
    go: Record<string, string>;
  };
  const stamp = join(JAEGER_DIR, ".installed");
  return !(
    existsSync(join(JAEGER_DIR, "jaeger")) &&
    existsSync(stamp) &&
    readFileSync(stamp, "utf8") === versions.go[JAEGER_MODULE]
  );
}

/**
 * Builds Jaeger with scripts/ensure-jaeger.mjs (its progress on stderr) unless it is in place:
 * `keel dev --traces` and the tracing tests need it, nothing else, so `npm run ensure` leaves it
 * to them. Waits for a build another process is doing. Without Go the script only says what to
 * install, and `jaegerBinary` then refuses with the same advice.
 */
export async function ensureJaeger(env: NodeJS.ProcessEnv): Promise<void> {
  if (!jaegerNeedsBuild(env)) return;
  const build = spawn(process.execPath, [join(projectRoot, "scripts/ensure-jaeger.mjs")], {
    cwd: projectRoot,
    stdio: ["ignore", "inherit", "inherit"],
  });
  const [code] = (await once(build, "exit")) as [number | null];
  if (code !== 0) throw new Error(`building Jaeger failed (exit ${code}); its output is above`);
}

/** The binary: KEEL_JAEGER_BIN, or the one `ensureJaeger` builds. */
function jaegerBinary(env: NodeJS.ProcessEnv = process.env): string {
  const path = env.KEEL_JAEGER_BIN ?? join(JAEGER_DIR, "jaeger");
  if (!existsSync(path))
    throw new Error(
      `Jaeger not found at ${path}; install Go 1.24+ and run \`node scripts/ensure-jaeger.mjs\` (it builds Jaeger into .keel/tools/jaeger; \`keel dev --traces\` and the tracing tests run it themselves), or set KEEL_JAEGER_BIN.`,
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
