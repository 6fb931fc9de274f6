/**
 * The Temporal server as a production cluster runs it: frontend, history (16 shards), matching and
 * worker services as separate processes of the `temporal-server` binary built from its Go module
 * (scripts/ensure-temporal-server.mjs), over PostgreSQL with SQL visibility, the schema created and
 * upgraded by the server's own SQL tool, the namespace and Keel's search attributes registered with
 * the Temporal CLI, and a dynamic config holding only what an operator sets for Keel (fairness).
 * One templated config file serves every process; each gets its ports through the environment.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { waitForPort } from "../../src/cli/devstack/ports";
import { type ServiceProcess, startServiceProcess } from "../../src/cli/devstack/service-process";
import { projectRoot, toolPaths } from "../../src/cli/devstack/tools";
import { keelSearchAttributes } from "../../src/workflows/search-attributes";
import {
  clusterDir,
  POSTGRES_PORT,
  POSTGRES_TEMPORAL_USER,
  TEMPORAL_ADDRESS,
  TEMPORAL_FRONTEND_HTTP_PORT,
  TEMPORAL_HISTORY_SHARDS,
  TEMPORAL_NAMESPACE,
  TEMPORAL_NAMESPACE_RETENTION,
  TEMPORAL_SERVICES,
  type TemporalServiceInstance,
} from "./layout";
import { type ClusterPart, type PartKind, run, startPart, waitUntil } from "./parts";
import { databaseExists } from "./postgres";

const serverDir = join(projectRoot, ".keel/tools/temporal-server");
const temporalDir = join(clusterDir, "temporal");
const configFile = join(temporalDir, "temporal.yaml");
const dynamicConfigFile = join(temporalDir, "dynamicconfig.yaml");
const SERVICE_START_TIMEOUT_MS = 90_000;

/** The binaries scripts/ensure-temporal-server.mjs puts in place. */
export const temporalBinaries = {
  server: join(serverDir, "temporal-server"),
  sqlTool: join(serverDir, "temporal-sql-tool"),
};

/** Databases and the embedded schema each gets (`--schema-name` of the SQL tool). */
const DATABASES = [
  { name: "temporal", schema: "postgresql/v12/temporal" },
  { name: "temporal_visibility", schema: "postgresql/v12/visibility" },
];

function sqlStore(database: string, maxConns: number): string {
  return `{ pluginName: postgres12, databaseName: ${database}, connectAddr: "127.0.0.1:${POSTGRES_PORT}", connectProtocol: tcp, user: ${POSTGRES_TEMPORAL_USER}, password: ${POSTGRES_TEMPORAL_USER}, maxConns: ${maxConns}, maxIdleConns: ${maxConns}, maxConnLifetime: 1h }`;
}

/** One file for every process: `# enable-template` lets each take its ports from its environment. */
function serverConfig(): string {
  const first = (service: string) =>
    TEMPORAL_SERVICES.find((instance) => instance.service === service)!.ports;
  const portsOf = (service: string) =>
    `{ grpcPort: {{ env "TEMPORAL_GRPC_PORT" | default "${first(service).grpc}" }}, membershipPort: {{ env "TEMPORAL_MEMBERSHIP_PORT" | default "${first(service).membership}" }}, bindOnIP: 127.0.0.1`;
  return `# enable-template
log: { stdout: true, level: warn, format: json }
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ${TEMPORAL_HISTORY_SHARDS}
  datastores:
    default:
      sql: ${sqlStore("temporal", 20)}
    visibility:
      sql: ${sqlStore("temporal_visibility", 10)}
global:
  membership: { maxJoinDuration: 30s, broadcastAddress: "127.0.0.1" }
  metrics:
    prometheus: { framework: tally, timerType: histogram, listenAddress: '127.0.0.1:{{ env "TEMPORAL_METRICS_PORT" }}' }
services:
  frontend: { rpc: ${portsOf("frontend")}, httpPort: ${TEMPORAL_FRONTEND_HTTP_PORT} } }
  history: { rpc: ${portsOf("history")} } }
  matching: { rpc: ${portsOf("matching")} } }
  worker: { rpc: ${portsOf("worker")} } }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active: { enabled: true, initialFailoverVersion: 1, rpcName: frontend, rpcAddress: "${TEMPORAL_ADDRESS}", httpAddress: "127.0.0.1:${TEMPORAL_FRONTEND_HTTP_PORT}" }
dcRedirectionPolicy: { policy: noop }
archival: { history: { state: disabled }, visibility: { state: disabled } }
namespaceDefaults: { archival: { history: { state: disabled }, visibility: { state: disabled } } }
dynamicConfigClient: { filepath: "${dynamicConfigFile}", pollInterval: 10s }
`;
}

/**
 * What an operator sets for Keel: tasks dispatched by fairness key (the tenant), off by default in
 * 1.32. Nothing else: the dev server's convenience settings are left at the cluster defaults.
 */
const DYNAMIC_CONFIG = `matching.enableFairness:
  - value: true
    constraints: { namespace: ${TEMPORAL_NAMESPACE} }
`;

/** Creates the databases (first start) and brings both schemas to the binary's version. */
function setUpSchema(): void {
  for (const { name, schema } of DATABASES) {
    const tool = [
      "--plugin",
      "postgres12",
      "--ep",
      "127.0.0.1",
      "-p",
      String(POSTGRES_PORT),
      "-u",
      POSTGRES_TEMPORAL_USER,
      "--pw",
      POSTGRES_TEMPORAL_USER,
      "--db",
      name,
    ];
    if (!databaseExists(name)) run(temporalBinaries.sqlTool, [...tool, "create-database"]);
    // Both are no-ops on a database already at (or past) the version they bring.
    run(temporalBinaries.sqlTool, [...tool, "setup-schema", "-v", "0.0"]);
    run(temporalBinaries.sqlTool, [...tool, "update-schema", "--schema-name", schema]);
  }
}

function writeConfigs(): void {
  mkdirSync(temporalDir, { recursive: true });
  writeFileSync(configFile, serverConfig());
  writeFileSync(dynamicConfigFile, DYNAMIC_CONFIG);
  run(temporalBinaries.server, ["validate-dynamic-config", dynamicConfigFile]);
}

function startServiceProcessOf(instance: TemporalServiceInstance): Promise<ServiceProcess> {
  const process = startServiceProcess(
    `temporal-${instance.name}`,
    temporalBinaries.server,
    ["--config-file", configFile, "--allow-no-auth", "start", "--service", instance.service],
    {
      logFile: join(temporalDir, `${instance.name}.log`),
      env: {
        PATH: globalThis.process.env.PATH,
        TEMPORAL_GRPC_PORT: String(instance.ports.grpc),
        TEMPORAL_MEMBERSHIP_PORT: String(instance.ports.membership),
        TEMPORAL_METRICS_PORT: String(instance.ports.metrics),
      },
    },
  );
  return waitForPort(instance.ports.grpc, SERVICE_START_TIMEOUT_MS, process.isAlive).then(
    () => process,
    async (error) => {
      await process.stop();
      throw new Error(
        `temporal ${instance.name} did not start (${(error as Error).message}); see ${process.logFile}`,
      );
    },
  );
}

const cli = (args: string[]) => run(toolPaths().temporal, [...args, "--address", TEMPORAL_ADDRESS]);

/**
 * Registers the namespace and Keel's search attributes (first start), then waits until a list
 * query on them succeeds: on SQL visibility the attributes are aliases kept in the namespace
 * record, which the frontend reads through a cache refreshed every few seconds.
 */
async function registerNamespace(): Promise<void> {
  await waitUntil(
    "Temporal frontend health",
    async () => {
      cli(["operator", "cluster", "health"]);
      return true;
    },
    { timeoutMs: SERVICE_START_TIMEOUT_MS, intervalMs: 1_000 },
  );
  try {
    cli(["operator", "namespace", "describe", "--namespace", TEMPORAL_NAMESPACE]);
  } catch {
    cli([
      "operator",
      "namespace",
      "create",
      "--namespace",
      TEMPORAL_NAMESPACE,
      "--retention",
      TEMPORAL_NAMESPACE_RETENTION,
    ]);
  }
  // A new namespace reaches the frontend's namespace cache a few seconds after it is created.
  let existing = "";
  await waitUntil(
    "namespace visible",
    async () => {
      existing = cli(["operator", "search-attribute", "list", "--namespace", TEMPORAL_NAMESPACE]);
      return true;
    },
    { timeoutMs: 60_000, intervalMs: 1_000 },
  );
  const missing = keelSearchAttributes.filter(({ name }) => !existing.includes(name));
  if (missing.length > 0) {
    await waitUntil(
      "search attributes",
      async () => {
        cli([
          "operator",
          "search-attribute",
          "create",
          "--namespace",
          TEMPORAL_NAMESPACE,
          ...missing.flatMap(({ name }) => ["--name", name, "--type", "Keyword"]),
        ]);
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 2_000 },
    );
  }
  const probe = keelSearchAttributes.map(({ name }) => `${name}="probe"`).join(" and ");
  await waitUntil(
    "search attributes usable",
    async () => {
      cli(["workflow", "list", "--namespace", TEMPORAL_NAMESPACE, "--query", probe, "--limit", "1"]);
      return true;
    },
    { timeoutMs: 60_000, intervalMs: 1_000 },
  );
  // History is reachable through the frontend: an unknown workflow is NotFound, not Unavailable.
  await waitUntil(
    "history reachable",
    async () => {
      try {
        cli([
          "workflow",
          "describe",
          "--namespace",
          TEMPORAL_NAMESPACE,
          "--workflow-id",
          "keel-cluster-probe",
        ]);
        return true;
      } catch (error) {
        return /not found/i.test((error as Error).message);
      }
    },
    { timeoutMs: 60_000, intervalMs: 1_000 },
  );
}

/** Schema, configs, the six service processes in order, then the namespace. */
export async function startTemporal(): Promise<ClusterPart[]> {
  setUpSchema();
  writeConfigs();
  const parts: ClusterPart[] = [];
  try {
    for (const instance of TEMPORAL_SERVICES) {
      parts.push(
        await startPart(instance.name, `temporal-${instance.service}` as PartKind, () =>
          startServiceProcessOf(instance),
        ),
      );
    }
    await registerNamespace();
  } catch (error) {
    await Promise.all(parts.map((part) => part.current().stop()));
    throw error;
  }
  return parts;
}
