/** The suite file and the mapping of SWE-bench-style task instances to cases. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  caseFromSweInstance,
  caseIdOf,
  SuiteFileSchema,
  SweInstanceSchema,
  suiteFileJsonSchema,
} from "../../../src/evals/suite-file";

const instance = {
  instance_id: "astropy__astropy-12907",
  repo: "astropy/astropy",
  base_commit: "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
  problem_statement:
    "Modeling's separability_matrix does not compute separability correctly for nested CompoundModels",
  test_patch: "diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -1 +1 @@\n-a\n+b\n",
  // As the published dataset holds them: JSON-encoded lists.
  FAIL_TO_PASS: '["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]',
  PASS_TO_PASS: '["astropy/modeling/tests/test_separable.py::test_coord_matrix"]',
  version: "4.3",
};

test("an instance becomes a case: its repository at the base commit, the statement, and checks for both test lists", () => {
  const parsed = SweInstanceSchema.parse(instance);
  expect(parsed.FAIL_TO_PASS).toEqual([
    "astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]",
  ]);
  const evalCase = caseFromSweInstance(parsed, {
    repoRoot: "/repos/",
    testCommand: "python -m pytest {tests}",
    timeoutSeconds: 600,
  });
  expect(evalCase).toMatchObject({
    id: "astropy__astropy-12907",
    prompt: instance.problem_statement,
    workspace: { type: "git", path: "/repos/astropy/astropy", commit: instance.base_commit },
  });
  expect(evalCase.checks).toHaveLength(2);
  const [failToPass, passToPass] = evalCase.checks as { command: string; timeoutSeconds: number }[];
  // The test patch goes in through a here-document, then the tests run, names quoted for the shell.
  expect(failToPass?.command).toMatch(
    /^git apply --whitespace=nowarn - <<'END_OF_EVAL_TEST_PATCH'\ndiff --git/,
  );
  expect(failToPass?.command).toContain(
    "\nEND_OF_EVAL_TEST_PATCH\npython -m pytest 'astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]'",
  );
  expect(passToPass?.command).toContain(
    "python -m pytest 'astropy/modeling/tests/test_separable.py::test_coord_matrix'",
  );
  expect(failToPass?.timeoutSeconds).toBe(600);
  // The case is one a suite file accepts.
  expect(SuiteFileSchema.safeParse({ cases: [evalCase] }).success).toBe(true);
});

test("a test name holding a quote stays one word; instance ids become case ids", () => {
  const evalCase = caseFromSweInstance(
    SweInstanceSchema.parse({ ...instance, FAIL_TO_PASS: ["it's"], PASS_TO_PASS: [], test_patch: "" }),
    { repoRoot: "/r", testCommand: "run {tests}" },
  );
  expect(evalCase.checks).toEqual([{ type: "command", command: "run 'it'\\''s'" }]);
  expect(caseIdOf("django/django#1.2")).toBe("django-django-1-2");
  expect(caseIdOf("__x")).toBe("x");
});

test("a suite file is refused for what is wrong with it", () => {
  const bad = SuiteFileSchema.safeParse({
    cases: [
      { id: "a", prompt: "p", workspace: { type: "git", path: "/r" } },
      { id: "a", prompt: "p", checks: [{ type: "file", path: "x", matches: "(" }] },
    ],
  });
  expect(bad.success).toBe(false);
  const messages = bad.error?.issues.map((issue) => issue.message).join("\n") ?? "";
  expect(messages).toContain("a local repository needs `commit`");
  expect(messages).toContain("must be a valid regular expression");
});

test("docs/eval-suite.schema.json is the suite file's schema (keel eval schema > docs/eval-suite.schema.json, then npx biome format --write)", () => {
  const committed = JSON.parse(readFileSync(join(__dirname, "../../../docs/eval-suite.schema.json"), "utf8"));
  expect(committed).toEqual(suiteFileJsonSchema());
});
