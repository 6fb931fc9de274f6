/**
 * The workflow bundle holds only the pure core and the workflow code. Zod in particular stays
 * out: the worker's reusable V8 context rebuilds every module of the bundle for each workflow and
 * each replay, so a schema library there costs CPU on every run.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpDir, workflowBundlePath } from "../../support/integration-env";

test("the workflow bundle does not contain zod or any I/O module of the project", () => {
  const code = readFileSync(workflowBundlePath(), "utf8");
  expect(code).toContain("src/workflows/agent-run.ts");
  expect(code).not.toMatch(/node_modules\/zod\//);
  for (const folder of ["src/store/", "src/providers/", "src/api/", "src/tools/", "src/activities/"]) {
    expect(code).not.toContain(folder);
  }
});

test("the deployed workflow bundle carries no inline source map and no zod", () => {
  const output = join(testTmpDir(), "deployed-workflows.js");
  execFileSync(process.execPath, ["--import", "tsx", "infra/bundling/bundle-workflows.ts", output], {
    cwd: join(__dirname, "../../.."),
    stdio: "pipe",
  });
  const code = readFileSync(output, "utf8");
  expect(code).toContain("agentRun");
  expect(code).not.toContain("sourceMappingURL");
  expect(code).not.toMatch(/node_modules\/zod\//);
}, 120_000);
