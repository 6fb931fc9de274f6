/**
 * The workflow bundle holds only the pure core and the workflow code. Zod in particular stays
 * out: the worker's reusable V8 context rebuilds every module of the bundle for each workflow and
 * each replay, so a schema library there costs CPU on every run.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { historyFromJSON } from "@temporalio/common/lib/proto-utils";
import { Worker } from "@temporalio/worker";
import { testTmpDir, workflowBundlePath } from "../../support/integration-env";

test("the workflow bundle does not contain zod or any I/O module of the project", () => {
  const code = readFileSync(workflowBundlePath(), "utf8");
  expect(code).toContain("src/workflows/agent-run.ts");
  expect(code).not.toMatch(/node_modules\/zod\//);
  for (const folder of ["src/store/", "src/providers/", "src/api/", "src/tools/", "src/activities/"]) {
    expect(code).not.toContain(folder);
  }
});

test("the deployed workflow bundle loads in a worker, with a small source map without sources and no zod", async () => {
  const output = join(testTmpDir(), "deployed-workflows.js");
  execFileSync(process.execPath, ["--import", "tsx", "infra/bundling/bundle-workflows.ts", output], {
    cwd: join(__dirname, "../../.."),
    stdio: "pipe",
  });
  const code = readFileSync(output, "utf8");
  expect(code).toContain("agentRun");
  expect(code).not.toMatch(/node_modules\/zod\//);
  // Untraced: the tracing interceptors are in the `--traced` bundle only (telemetry/traces.test.ts).
  expect(code).not.toContain("src/telemetry/workflow-interceptors.ts");
  const inline = code.slice(code.lastIndexOf("//# sourceMappingURL=data:"));
  const map = JSON.parse(Buffer.from(inline.slice(inline.indexOf("base64,") + 7), "base64").toString()) as {
    sources: string[];
    sourcesContent?: unknown[];
  };
  expect(map.sources.some((source) => source.includes("src/workflows/agent-run.ts"))).toBe(true);
  expect(map.sourcesContent ?? []).toEqual([]);
  expect(inline.length).toBeLessThan(300_000);
  // What a deployed worker does with it (Worker.create parses it the same way).
  const history = historyFromJSON(
    JSON.parse(readFileSync(join(__dirname, "../../fixtures/histories/text-answer.json"), "utf8")),
  );
  await Worker.runReplayHistory({ workflowBundle: { codePath: output } }, history);
}, 120_000);
