/**
 * A wrong workspace directory, as a person meets it: the CLI refuses a path that is not a
 * directory before anything starts (its API is on this machine), the API refuses a relative one,
 * and a run whose directory is missing on the worker fails at once, naming the path, instead of
 * looking live for ten retries of its workspace claim.
 */
import { uniqueName } from "../../support/integration-env";
import { createRunStage, eventually, type RunStage } from "../../support/run-harness";
import { type CliApi, runKeel, startCliApi } from "./keel-process";

const KEY = `cli-key-${uniqueName("k")}`;
let stage: RunStage;
let api: CliApi;
let env: Record<string, string>;

beforeAll(async () => {
  stage = await createRunStage();
  await stage.startWorker();
  api = await startCliApi(stage, { [KEY]: stage.tenantId }, { KEEL_API_ALLOW_DIRECTORY_WORKSPACES: "true" });
  env = { KEEL_API_URL: api.url, KEEL_API_KEY: KEY };
});

afterAll(async () => {
  await api?.close();
  await stage?.close();
});

jest.setTimeout(120_000);

const post = (sessionId: string, body: unknown) =>
  fetch(`${api.url}/v1/sessions/${sessionId}/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

test("the CLI refuses a --workspace-dir that is not a directory, before starting anything", async () => {
  const sessionId = uniqueName("cli");
  const result = await runKeel(["run", "x", "--session", sessionId, "--workspace-dir", "no/such/dir"], env);
  expect(result.code).toBe(2);
  expect(result.stderr).toContain(`--workspace-dir: ${process.cwd()}/no/such/dir is not a directory`);
  expect((await runKeel(["show", sessionId], env)).code).toBe(3);
});

test("the API refuses a relative directory with a 400 naming the field", async () => {
  const response = await post(uniqueName("api"), {
    text: "x",
    workspace: { type: "directory", path: "rel/dir" },
  });
  expect(response.status).toBe(400);
  expect(JSON.stringify(await response.json())).toContain(
    "workspace.path: must be an absolute path on the worker machine",
  );
});

test("a directory missing on the worker fails the run at once, naming the path", async () => {
  stage.llm.addScenario("ls-missing", {
    turns: [{ text: "Let me look.", toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "Done." },
  });
  const sessionId = uniqueName("api");
  const started = Date.now();
  expect(
    (
      await post(sessionId, {
        text: "[scenario:ls-missing] look",
        workspace: { type: "directory", path: "/no/such/keel-dir" },
      })
    ).status,
  ).toBe(202);
  const shown = await eventually(async () => {
    const result = await runKeel(["show", sessionId, "--json"], env);
    const view = JSON.parse(result.stdout || "{}");
    return ["completed", "failed", "aborted"].includes(view.run?.status) ? view : undefined;
  }, 60_000);
  expect(shown.run.status).toBe("failed");
  expect(JSON.stringify(shown.run)).toContain(
    "the workspace source directory /no/such/keel-dir does not exist on this worker",
  );
  // Not retried: the claim's ten attempts took ~90 s before.
  expect(Date.now() - started).toBeLessThan(45_000);
});
