/**
 * Writes the prebuilt workflow bundle workers load (`KEEL_WORKFLOW_BUNDLE`), so no worker runs
 * webpack at start. Usage: `tsx infra/bundling/bundle-workflows.ts <output file>`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { bundleWorkflowCode } from "@temporalio/worker";
import { deployedBundleConfig } from "./deployed-bundle";

const WORKFLOWS_ENTRY = resolve(__dirname, "../../src/workflows/index.ts");

async function main(output: string | undefined): Promise<void> {
  if (!output) throw new Error("usage: bundle-workflows.ts <output file>");
  const quiet = () => {};
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_ENTRY,
    logger: { trace: quiet, debug: quiet, info: quiet, log: quiet, warn: console.warn, error: console.error },
    webpackConfigHook: deployedBundleConfig,
  });
  mkdirSync(dirname(resolve(output)), { recursive: true });
  writeFileSync(output, code);
}

main(process.argv[2]).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
