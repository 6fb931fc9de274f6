/**
 * The stage a run benchmark stands on (support/stack.ts), built on the local cluster's servers:
 * PostgreSQL, Temporal's separate services and distributed SeaweedFS, started here without Keel's
 * own processes (the benchmark runs its workers itself) and stopped by `close`. The local LLM
 * server runs in this process, as on the dev-server stage. Outside CI only (startCluster refuses).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, Connection } from "@temporalio/client";
import { startLocalLlmServer } from "../../src/providers/local-server";
import { clientInterceptors } from "../../src/run-client/client-interceptors";
import { type BenchStack, bundleWorkflows, quietTemporalLogs } from "../support/stack";
import { startCluster } from "./cluster";
import { TEMPORAL_ADDRESS, TEMPORAL_FRONTEND_METRICS_URL, TEMPORAL_NAMESPACE } from "./layout";
import type { PartKind } from "./parts";
import { clusterS3Settings } from "./seaweedfs";

/** How the results name each kind of server process (one row per name). */
const SERVER_NAMES: Partial<Record<PartKind, string>> = {
  postgres: "PostgreSQL",
  "temporal-history": "Temporal history (2 processes)",
  "temporal-matching": "Temporal matching (2 processes)",
  "temporal-frontend": "Temporal frontend",
  "temporal-worker": "Temporal worker service",
  seaweedfs: "SeaweedFS (master, 3 volume servers, filer + S3)",
};

export async function startClusterBenchStack(): Promise<BenchStack> {
  quietTemporalLogs();
  const dir = mkdtempSync(join(tmpdir(), "keel-bench-cluster-"));
  const cluster = await startCluster((line) => console.log(`cluster: ${line}`), {}, { serversOnly: true });
  try {
    const [keelBundlePath, llm] = await Promise.all([
      bundleWorkflows("src/workflows/index.ts", dir, "keel-workflows"),
      startLocalLlmServer(),
    ]);
    const connection = await Connection.connect({
      address: TEMPORAL_ADDRESS,
      interceptors: clientInterceptors(),
    });
    return {
      dir,
      label: "the local cluster (bench/cluster/: Temporal's services over PostgreSQL, SeaweedFS distributed)",
      temporal: {
        address: TEMPORAL_ADDRESS,
        namespace: TEMPORAL_NAMESPACE,
        metricsUrl: TEMPORAL_FRONTEND_METRICS_URL,
      },
      s3: { settings: clusterS3Settings },
      servers: () =>
        cluster.parts.flatMap((part) => {
          const name = SERVER_NAMES[part.kind];
          return name ? [{ name, pid: part.current().pid }] : [];
        }),
      llm,
      connection,
      client: new Client({ connection, namespace: TEMPORAL_NAMESPACE }),
      keelBundlePath,
      async close() {
        await connection.close();
        await llm.close();
        await cluster.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}
