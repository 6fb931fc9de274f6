import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { exampleConfig, functionRole, synthesize } from "./synth";

// Bundles the workflow code and copies the worker's runtime packages, as `cdk synth` does.
jest.setTimeout(180_000);

test("the Lambda worker package holds the handler, a workflow bundle and only the arm64 core", () => {
  const { template, assemblyDir } = synthesize(exampleConfig("example-lambda.json"), {
    lambdaRuntimeFiles: true,
  });
  const { functionId } = functionRole(template, "WorkersFunction");
  const fn = template.findResources("AWS::Lambda::Function")[functionId]!;
  // The code object is `<asset hash>.zip`; the staged asset is `asset.<asset hash>/`.
  const assetHash = String(fn.Properties.Code.S3Key).replace(/\.zip$/, "");
  const dir = join(assemblyDir, `asset.${assetHash}`);

  const handler = readFileSync(join(dir, "index.js"), "utf8");
  // `@temporalio/*` stays a runtime require (one copy of each, loaded from node_modules).
  expect(handler).toMatch(/require\("@temporalio\/lambda-worker"\)/);
  expect(readFileSync(join(dir, "workflow-bundle.js"), "utf8")).toContain("agentRun");

  const coreReleases = join(dir, "node_modules/@temporalio/core-bridge/releases");
  expect(readdirSync(coreReleases)).toEqual(["aarch64-unknown-linux-gnu"]);
  expect(existsSync(join(coreReleases, "aarch64-unknown-linux-gnu/index.node"))).toBe(true);
  expect(existsSync(join(dir, "node_modules/@temporalio/core-bridge/sdk-core"))).toBe(false);
  for (const name of ["lambda-worker", "worker", "activity", "client", "common", "workflow", "proto"]) {
    expect(existsSync(join(dir, "node_modules/@temporalio", name, "package.json"))).toBe(true);
  }
  // SWC only compiles workflow code, which the prebuilt bundle replaces.
  expect(existsSync(join(dir, "node_modules/@swc"))).toBe(false);
});
