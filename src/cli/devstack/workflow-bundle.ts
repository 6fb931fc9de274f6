/** The workflow code bundled for the local worker (written to a file the worker loads). */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { workflowInterceptorModules } from "../../telemetry/workflow-modules";
import { projectRoot } from "./tools";

const quiet = { trace() {}, debug() {}, info() {}, warn() {}, log() {}, error: console.error };

/**
 * Bundles `src/workflows` into `file` (a few seconds); resolves with the file's path. A `traced`
 * bundle includes the OpenTelemetry workflow interceptors (for workers with KEEL_OTEL_ENDPOINT).
 */
export async function writeWorkflowBundle(file: string, options: { traced?: boolean } = {}): Promise<string> {
  // Loaded here, not at the top: the worker SDK is heavy and only `keel dev` needs it.
  const { bundleWorkflowCode } = await import("@temporalio/worker");
  const bundle = await bundleWorkflowCode({
    workflowsPath: join(projectRoot, "src/workflows/index.ts"),
    logger: quiet,
    ...(options.traced ? { workflowInterceptorModules: workflowInterceptorModules() } : {}),
  });
  writeFileSync(file, bundle.code);
  return file;
}
