/**
 * The workflow bundle holds only the pure core and the workflow code. Zod in particular stays
 * out: the worker's reusable V8 context rebuilds every module of the bundle for each workflow and
 * each replay, so a schema library there costs CPU on every run.
 */
import { readFileSync } from "node:fs";
import { workflowBundlePath } from "../../support/integration-env";

test("the workflow bundle does not contain zod or any I/O module of the project", () => {
  const code = readFileSync(workflowBundlePath(), "utf8");
  expect(code).toContain("src/workflows/agent-run.ts");
  expect(code).not.toMatch(/node_modules\/zod\//);
  for (const folder of ["src/store/", "src/providers/", "src/api/", "src/tools/", "src/activities/"]) {
    expect(code).not.toContain(folder);
  }
});
