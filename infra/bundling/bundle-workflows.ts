/**
 * Writes the prebuilt workflow bundle workers load (`KEEL_WORKFLOW_BUNDLE`), so no worker runs
 * webpack at start; with `--traced`, the bundle with the tracing interceptors that a worker with
 * telemetry on loads instead (`KEEL_WORKFLOW_BUNDLE_TRACED`), the same modules the local worker
 * bundles when telemetry is on. Usage: `tsx infra/bundling/bundle-workflows.ts [--traced] <output file>`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { bundleWorkflowCode } from "@temporalio/worker";
import { workflowInterceptorModules } from "../../src/telemetry/workflow-modules";
import { deployedBundleConfig } from "./deployed-bundle";

const WORKFLOWS_ENTRY = resolve(__dirname, "../../src/workflows/index.ts");
const USAGE = "usage: bundle-workflows.ts [--traced] <output file>";

async function main(args: string[]): Promise<void> {
  const traced = args[0] === "--traced";
  const [output, ...rest] = traced ? args.slice(1) : args;
  if (!output || rest.length > 0 || output.startsWith("-")) throw new Error(USAGE);
  const quiet = () => {};
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_ENTRY,
    logger: { trace: quiet, debug: quiet, info: quiet, log: quiet, warn: console.warn, error: console.error },
    webpackConfigHook: deployedBundleConfig,
    ...(traced ? { workflowInterceptorModules: workflowInterceptorModules() } : {}),
  });
  mkdirSync(dirname(resolve(output)), { recursive: true });
  writeFileSync(output, code);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
