/**
 * The stage every run benchmark stands on: a Temporal dev server and an S3 server with temporary
 * data folders, the local LLM server, a Temporal client and Keel's workflow bundle. Nothing here
 * touches the developer's `.keel/data` stack.
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client, Connection } from "@temporalio/client";
import { bundleWorkflowCode, DefaultLogger, Runtime } from "@temporalio/worker";
import { deployedBundleConfig } from "../../infra/bundling/deployed-bundle";
import { type S3DevServer, startS3DevServer } from "../../src/cli/devstack/s3-server";
import { startTemporalDevServer, type TemporalDevServer } from "../../src/cli/devstack/temporal-server";
import {
  type LocalLlmServer,
  type LocalLlmServerOptions,
  startLocalLlmServer,
} from "../../src/providers/local-server";
import { clientInterceptors } from "../../src/run-client/client-interceptors";

export const projectRoot = resolve(__dirname, "../..");
const BENCH_BUCKET = "keel-bench";
/** The naive history benchmark fetches histories of tens of MB; gRPC's default cap is 4 MB. */
const MAX_RECEIVE_BYTES = 256 * 1024 * 1024;

const quietBundlerLogger = {
  trace() {},
  debug() {},
  info() {},
  warn: console.warn,
  error: console.error,
  log() {},
};

/** A server process of the stack, named as the results name it (several may share a name). */
export interface StackProcess {
  name: string;
  pid: number;
}

export interface BenchStack {
  dir: string;
  /** Where the stack runs, as the results say it ("the Temporal dev server", "the local cluster"). */
  label: string;
  temporal: Pick<TemporalDevServer, "address" | "namespace" | "metricsUrl">;
  s3: Pick<S3DevServer, "settings">;
  /** The Temporal and S3 server processes running now (their CPU is measured by process tree). */
  servers(): StackProcess[];
  llm: LocalLlmServer;
  connection: Connection;
  client: Client;
  /** Keel's production workflow bundle (src/workflows), written to a file for workers. */
  keelBundlePath: string;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/** Temporal's SDK logs every worker state change at INFO; a benchmark only wants warnings. */
export function quietTemporalLogs(): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: new DefaultLogger("WARN") });
  runtimeInstalled = true;
}

/** Bundles workflow code from `workflowsPath` (relative to the project root) into `dir`. */
export async function bundleWorkflows(workflowsPath: string, dir: string, name: string): Promise<string> {
  const bundle = await bundleWorkflowCode({
    workflowsPath: resolve(projectRoot, workflowsPath),
    logger: quietBundlerLogger,
    // As deployed (small source map): what a worker of a deployment loads and keeps.
    webpackConfigHook: deployedBundleConfig,
  });
  const path = join(dir, `${name}.js`);
  writeFileSync(path, bundle.code);
  return path;
}

export async function startBenchStack(
  llmOptions: LocalLlmServerOptions = {},
  /** The dev server's settings: `fairness: false` turns dispatch by fairness key off (default on). */
  temporalOptions: { fairness?: boolean } = {},
): Promise<BenchStack> {
  quietTemporalLogs();
  const dir = mkdtempSync(join(tmpdir(), "keel-bench-"));
  const temporalDir = join(dir, "temporal");
  const s3Dir = join(dir, "s3");
  mkdirSync(temporalDir);
  mkdirSync(s3Dir);
  const [temporal, s3, keelBundlePath, llm] = await Promise.all([
    startTemporalDevServer({ dataDir: temporalDir, ...temporalOptions }),
    startS3DevServer({ dataDir: s3Dir, bucket: BENCH_BUCKET }),
    bundleWorkflows("src/workflows/index.ts", dir, "keel-workflows"),
    startLocalLlmServer(llmOptions),
  ]);
  const connection = await Connection.connect({
    address: temporal.address,
    channelArgs: { "grpc.max_receive_message_length": MAX_RECEIVE_BYTES },
    interceptors: clientInterceptors(),
  });
  const client = new Client({ connection, namespace: temporal.namespace });
  return {
    dir,
    label: "the Temporal dev server",
    temporal,
    s3,
    servers: () => [
      { name: "Temporal dev server", pid: temporal.process.pid },
      { name: "S3 server", pid: s3.process.pid },
    ],
    llm,
    connection,
    client,
    keelBundlePath,
    async close() {
      await connection.close();
      await llm.close();
      await Promise.all([temporal.process.stop(), s3.process.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
