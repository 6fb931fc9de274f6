/**
 * Writes the prebuilt workflow bundle workers load (`KEEL_WORKFLOW_BUNDLE`), so no worker runs
 * webpack at start. Usage: `tsx infra/bundling/bundle-workflows.ts <output file>`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { bundleWorkflowCode } from "@temporalio/worker";

const WORKFLOWS_ENTRY = resolve(__dirname, "../../src/workflows/index.ts");

async function main(output: string | undefined): Promise<void> {
  if (!output) throw new Error("usage: bundle-workflows.ts <output file>");
  const quiet = () => {};
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_ENTRY,
    logger: { trace: quiet, debug: quiet, info: quiet, log: quiet, warn: console.warn, error: console.error },
    // The worker refuses a bundle without an inline source map ("Can't extract inlined source
    // map"), so the deployed bundle carries the smallest one: line mappings only, no sources
    // (about 90 KB instead of the 1.3 MB full map, which doubled the code every worker loads).
    // Workflow stack traces still name the source files and lines. Local stacks and tests keep
    // the full map.
    webpackConfigHook: (config) => ({ ...config, devtool: "inline-nosources-cheap-module-source-map" }),
  });
  mkdirSync(dirname(resolve(output)), { recursive: true });
  writeFileSync(output, code);
}

main(process.argv[2]).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
