/** What an integration test needs from the servers the global setup started. */

import { randomUUID } from "node:crypto";
import { Connection } from "@temporalio/client";
import { NativeConnection, Worker, type WorkerOptions } from "@temporalio/worker";
import { clientInterceptors } from "../../src/run-client/client-interceptors";
import { createS3Client, type S3Settings, s3SettingsFromEnv } from "../../src/store/s3-config";

function required(name: string): string {
  const value = process.env[name];
  if (!value)
    throw new Error(`${name} is not set: integration tests run through jest's global setup (npm test)`);
  return value;
}

export const temporalAddress = () => required("KEEL_TEST_TEMPORAL_ADDRESS");
export const temporalNamespace = () => required("KEEL_TEST_TEMPORAL_NAMESPACE");
export const workflowBundlePath = () => required("KEEL_TEST_WORKFLOW_BUNDLE");
export const testTmpDir = () => required("KEEL_TEST_TMP");

export function s3Settings(): S3Settings {
  return s3SettingsFromEnv(process.env);
}

export function s3Client() {
  return createS3Client(s3Settings());
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export async function clientConnection(): Promise<Connection> {
  // Generous for the same reason as the run stage's: parallel test files on 2 cores.
  return Connection.connect({
    address: temporalAddress(),
    connectTimeout: "60 seconds",
    interceptors: clientInterceptors(),
  });
}

/** A worker on the shared dev server running the shared workflow bundle. */
export async function createTestWorker(
  options: Omit<WorkerOptions, "connection" | "namespace" | "workflowBundle" | "workflowsPath">,
): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  const worker = await Worker.create({
    connection,
    namespace: temporalNamespace(),
    workflowBundle: { codePath: workflowBundlePath() },
    ...options,
  });
  return { worker, connection };
}
