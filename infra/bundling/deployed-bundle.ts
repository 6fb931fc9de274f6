/**
 * How the deployed workflow bundle is built (the ECS image and the Lambda workers load it as
 * `KEEL_WORKFLOW_BUNDLE`); the benchmarks build theirs the same way, to measure what is deployed.
 */
import type { BundleOptions } from "@temporalio/worker";

/**
 * The Temporal worker refuses a bundle without an inline source map ("Can't extract inlined
 * source map"), so the deployed bundle carries the smallest one: line mappings only, no sources
 * (about 90 KB instead of the 1.3 MB full map, which doubled the code every worker loads).
 * Workflow stack traces still name the source files and lines. Local stacks and tests keep the
 * full map.
 */
export const deployedBundleConfig: BundleOptions["webpackConfigHook"] = (config) => ({
  ...config,
  devtool: "inline-nosources-cheap-module-source-map",
});
