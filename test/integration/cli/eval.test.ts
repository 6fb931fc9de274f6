/**
 * `keel eval` as a subprocess against a live API, worker and the local model: a suite whose cases
 * take their files from a local directory and from a SWE-bench-style task instance on a local git
 * repository (imported with `keel eval import-swebench`), run against two models with `--wait`;
 * `show`, `list`, `compare`, a case made from a stored session (`case-from`), and the schema.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TurnContext } from "../../../src/providers/local-server";
import { testTmpDir, uniqueName } from "../../support/integration-env";
import { createRunStage, type RunStage } from "../../support/run-harness";
import { type CliApi, runKeel, startCliApi } from "./keel-process";

const KEY = `cli-key-${uniqueName("k")}`;
let stage: RunStage;
let api: CliApi;
let env: Record<string, string>;

beforeAll(async () => {
  stage = await createRunStage();
  await stage.startWorker();
  api = await startCliApi(stage, { [KEY]: stage.tenantId });
  env = { KEEL_API_URL: api.url, KEEL_API_KEY: KEY };
});

afterAll(async () => {
  await api?.close();
  await stage?.close();
});

jest.setTimeout(240_000);

const keel = (args: string[]) => runKeel(args, env);
const GOOD = "local-chat";
const BAD = "local-anthropic";
const isGood = (context: TurnContext) => context.request.api === "openai-completions";

/** A local repository whose `add` subtracts, at a commit; the fix is a later commit the case must not see. */
function buggyRepository(root: string): string {
  const repo = join(root, "acme", "calc");
  mkdirSync(repo, { recursive: true });
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: repo, stdio: "pipe" });
  git("init", "-q");
  writeFileSync(join(repo, "calc.sh"), "add() { echo $(( $1 - $2 )); }\n");
  git("add", "-A");
  git("commit", "-qm", "add, with a bug");
  const base = git("rev-parse", "HEAD").toString().trim();
  writeFileSync(join(repo, "calc.sh"), "add() { echo $(( $1 + $2 )); }\n");
  git("commit", "-qam", "the fix (later than the task's base commit)");
  return base;
}

test("a suite from a directory and a SWE-bench-style instance: model A passes, model B fails, and the CLI shows why", async () => {
  const root = mkdtempSync(join(testTmpDir(), "eval-cli-"));
  const scenario = uniqueName("eval-cli");
  stage.llm.addScenario(scenario, {
    turns: [
      (context) => {
        if (!isGood(context)) return { text: "I cannot help with that." };
        const task = context.request.messages.find((message) => message.role === "user");
        return task?.role === "user" && task.text.includes("add")
          ? {
              toolCalls: [
                { name: "edit", arguments: { path: "calc.sh", oldText: "$1 - $2", newText: "$1 + $2" } },
              ],
            }
          : { toolCalls: [{ name: "bash", arguments: { command: "echo 42 > answer.txt" } }] };
      },
    ],
    after: { text: "Done." },
  });

  // The SWE-bench-style instance: the test that must go from failing to passing comes in the test patch.
  const base = buggyRepository(join(root, "repos"));
  const testPatch = [
    "diff --git a/tests/test_add.sh b/tests/test_add.sh",
    "new file mode 100644",
    "--- /dev/null",
    "+++ b/tests/test_add.sh",
    "@@ -0,0 +1,2 @@",
    "+. ./calc.sh",
    '+test "$(add 2 3)" = 5',
    "",
  ].join("\n");
  const instance = {
    instance_id: "acme__calc-1",
    repo: "acme/calc",
    base_commit: base,
    problem_statement: `[scenario:${scenario}] add subtracts instead of adding.`,
    test_patch: testPatch,
    FAIL_TO_PASS: JSON.stringify(["tests/test_add.sh"]),
    PASS_TO_PASS: "[]",
  };
  writeFileSync(join(root, "tasks.jsonl"), `${JSON.stringify(instance)}\n`);
  const imported = await keel([
    "eval",
    "import-swebench",
    join(root, "tasks.jsonl"),
    "--repos",
    join(root, "repos"),
    "--test-cmd",
    "sh {tests}",
  ]);
  expect(imported).toMatchObject({ code: 0, stderr: "" });
  const swe = JSON.parse(imported.stdout);
  expect(swe.cases[0]).toMatchObject({ id: "acme__calc-1", workspace: { type: "git", commit: base } });

  mkdirSync(join(root, "answer"));
  writeFileSync(join(root, "answer", "answer.txt"), "41\n");
  const suite = {
    name: "cli",
    cases: [
      {
        id: "answer",
        prompt: `[scenario:${scenario}] Fix the answer.`,
        workspace: { type: "directory", path: "answer" },
        checks: [{ type: "file", path: "answer.txt", matches: "^42$" }],
      },
      ...swe.cases,
    ],
  };
  writeFileSync(join(root, "suite.json"), JSON.stringify(suite));

  const ran = await keel([
    "eval",
    "run",
    join(root, "suite.json"),
    "--model",
    GOOD,
    "--model",
    BAD,
    "--wait",
    "--json",
  ]);
  expect(ran.code).toBe(0);
  const view = JSON.parse(ran.stdout);
  const byModel = Object.fromEntries(
    view.report.models.map((model: { model: string }) => [model.model, model]),
  );
  expect(byModel[GOOD]).toMatchObject({ finished: 2, passed: 2 });
  expect(byModel[BAD]).toMatchObject({ finished: 2, passed: 0 });
  const sweFailure = view.report.failing.find(
    (failing: { caseId: string }) => failing.caseId === "acme__calc-1",
  );
  expect(sweFailure.model).toBe(BAD);

  // The text view: the table, the case rows and a link to each failing transcript.
  const shown = await keel(["eval", "show", view.eval.evalId]);
  expect(shown.code).toBe(0);
  expect(shown.stdout).toMatch(new RegExp(`${GOOD}\\s+100%`));
  expect(shown.stdout).toMatch(new RegExp(`${BAD}\\s+0%`));
  expect(shown.stdout).toContain(`${api.url}/view/sessions/${sweFailure.sessionId}`);
  expect((await keel(["eval", "list"])).stdout).toContain(view.eval.evalId);
  const page = join(root, "report.html");
  expect((await keel(["eval", "show", view.eval.evalId, "--html", page])).code).toBe(0);
  const html = readFileSync(page, "utf8");
  expect(html).toContain(`href="${api.url}/view/sessions/${sweFailure.sessionId}"`);
  expect(html).not.toContain("<script");

  // A case from real work: the good model's session of the directory case, with a check by hand.
  const goodAnswer = view.report.cases[0].results[0].sessions[0];
  const made = await keel([
    "eval",
    "case-from",
    goodAnswer,
    "--check",
    "grep -qx 42 answer.txt",
    "--id",
    "regression",
  ]);
  expect(made.code).toBe(0);
  const regression = JSON.parse(made.stdout);
  expect(regression).toMatchObject({
    id: "regression",
    prompt: `[scenario:${scenario}] Fix the answer.`,
    workspace: { type: "session", sessionId: goodAnswer },
    checks: [{ type: "command", command: "grep -qx 42 answer.txt" }],
  });
  writeFileSync(join(root, "regression.json"), JSON.stringify({ cases: [{ ...regression, id: "answer" }] }));
  const again = await keel([
    "eval",
    "run",
    join(root, "regression.json"),
    "--model",
    GOOD,
    "--model",
    BAD,
    "--wait",
    "--json",
  ]);
  const second = JSON.parse(again.stdout);
  expect(second.report.models.map((model: { passed: number }) => model.passed)).toEqual([1, 0]);

  const compared = await keel(["eval", "compare", view.eval.evalId, second.eval.evalId, "--json"]);
  expect(compared.code).toBe(0);
  expect(JSON.parse(compared.stdout)).toMatchObject({
    before: view.eval.evalId,
    after: second.eval.evalId,
    changes: [],
  });

  const schema = await keel(["eval", "schema"]);
  expect(JSON.parse(schema.stdout).properties.cases.type).toBe("array");
  const invalid = await keel(["eval", "run", join(root, "tasks.jsonl"), "--model", GOOD]);
  expect(invalid.code).toBe(2);
});
