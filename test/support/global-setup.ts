/**
 * Integration-test global setup: a real Temporal dev server and a real S3 server on free loopback
 * ports with temporary data folders, and the workflow bundle built once for the whole run. What
 * the tests need is handed over in KEEL_TEST_* / KEEL_S3_* environment variables.
 */

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { bundleWorkflowCode } from "@temporalio/worker";
import { startS3DevServer } from "../../src/cli/devstack/s3-server";
import { startTemporalDevServer } from "../../src/cli/devstack/temporal-server";
import { s3SettingsToEnv } from "../../src/store/s3-config";
import { type RunningServers, setRunningServers } from "./running-servers";

export default async function globalSetup(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "keel-test-"));
  const temporalDir = join(dir, "temporal");
  const s3Dir = join(dir, "s3");
  mkdirSync(temporalDir);
  mkdirSync(s3Dir);

  const [temporal, s3, bundle] = await Promise.all([
    startTemporalDevServer({ dataDir: temporalDir }),
    startS3DevServer({ dataDir: s3Dir, bucket: "keel-test" }),
    bundleWorkflowCode({
      workflowsPath: resolve(__dirname, "workflows.ts"),
      logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
    }),
  ]);
  const bundlePath = join(dir, "workflow-bundle.js");
  writeFileSync(bundlePath, bundle.code);

  const servers: RunningServers = { dir, stops: [() => temporal.process.stop(), () => s3.process.stop()] };
  setRunningServers(servers);

  Object.assign(process.env, {
    KEEL_TEST_TMP: dir,
    KEEL_TEST_TEMPORAL_ADDRESS: temporal.address,
    KEEL_TEST_TEMPORAL_NAMESPACE: temporal.namespace,
    KEEL_TEST_TEMPORAL_UI: temporal.uiUrl,
    KEEL_TEST_WORKFLOW_BUNDLE: bundlePath,
    ...s3SettingsToEnv(s3.settings),
  });
}
