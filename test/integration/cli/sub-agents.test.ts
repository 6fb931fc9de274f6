/**
 * Sub-agents from the command line: `keel run --tools …,task --agents FILE` gives a run its
 * agents, and `keel show` lists the run's task calls with their child sessions, how they ended and
 * what they cost.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
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

jest.setTimeout(180_000);

test("run --agents FILE delegates to the file's agent; show lists the child run", async () => {
  stage.llm.addScenario("cli-sub-parent", {
    turns: [
      {
        toolCalls: [
          { name: "task", arguments: { agent: "lister", prompt: "[scenario:cli-sub-child] list" } },
        ],
      },
    ],
    after: { text: "parent done" },
  });
  stage.llm.addScenario("cli-sub-child", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "child listed" },
  });
  const file = join(testTmpDir(), `${uniqueName("agents")}.json`);
  writeFileSync(file, JSON.stringify([{ name: "lister", description: "lists files", tools: ["ls"] }]));
  const sessionId = uniqueName("cli-sub");
  const run = await runKeel(
    [
      "run",
      "[scenario:cli-sub-parent] go",
      "--session",
      sessionId,
      "--tools",
      "ls,task",
      "--agents",
      file,
      "--follow",
    ],
    env,
  );
  expect(run).toMatchObject({ code: 0, stderr: "" });

  const shown = await runKeel(["show", sessionId], env);
  expect(shown.code).toBe(0);
  expect(shown.stdout).toMatch(
    new RegExp(
      `sub-agents\\n  lister  ${sessionId}-task-[0-9a-f]{16}  completed · \\d+ in / \\d+ out tokens`,
    ),
  );
  const child = shown.stdout.match(new RegExp(`(${sessionId}-task-[0-9a-f]{16})`))?.[1] ?? "";
  const childShown = await runKeel(["show", child], env);
  expect(childShown.stdout).toContain(`fork of  ${sessionId}`);
  expect(childShown.stdout).not.toContain("sub-agents");

  // One cost for the parent wherever it is shown: its own model calls and its sub-agent's.
  const [, total, subAgents] =
    shown.stdout.match(/^cost {5}(\$\d+\.\d{4}) incl\. sub-agents (\$\d+\.\d{4})/m) ?? [];
  expect(total).toBeDefined();
  expect(childShown.stdout).toMatch(new RegExp(`^cost {5}\\${subAgents}$`, "m"));
  expect(shown.stdout).toMatch(new RegExp(`^usage {4}this run, sub-agents included: .* · \\${total}$`, "m"));
  const listed = await runKeel(["sessions", "--limit", "50"], env);
  const row = listed.stdout.split("\n").find((line) => line.startsWith(`${sessionId}  `));
  expect(row).toContain(`  completed  ${total} incl. sub-agents ${subAgents}  `);
});
