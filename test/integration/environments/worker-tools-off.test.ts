/**
 * A deployment whose workers run no tool call (KEEL_WORKER_TOOLS=off on the API and the workers):
 * the API refuses runs that would run their tools on the workers, and a run that reaches a worker
 * anyway (started before the switch, or past the API) gets error results, its commands never run.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { WORKER_TOOLS_OFF_TEXT } from "../../../src/activities/execute-tool";
import { EnvironmentStore } from "../../../src/environments/store";
import { ToolCallMarkers } from "../../../src/store/tool-call-markers";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";
import { expectIntactSession, messagesOf } from "../../support/run-harness";
import { type ApiStage, createApiStage, expectProblem } from "../api/api-stage";

let api: ApiStage;
const s3 = s3Client();

beforeAll(async () => {
  const settings = s3Settings();
  api = await createApiStage({
    config: () => ({ workerTools: false }),
    workerEnv: { KEEL_WORKER_TOOLS: "off" },
    overrides: {
      environments: {
        store: new EnvironmentStore(s3, settings.bucket, settings.prefix),
        markers: new ToolCallMarkers(s3, settings),
      },
    },
  });
}, 240_000);

afterAll(async () => {
  await api?.close();
  s3.destroy();
});

jest.setTimeout(120_000);

test("a message or a schedule whose tools would run on the workers is refused, and nothing starts", async () => {
  const sessionId = uniqueName("s");
  for (const body of [{ text: "go" }, { text: "go", environment: "worker" }]) {
    const refused = await api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: body });
    expectProblem(refused, 400, "environment-required");
    expect(refused.body.detail).toContain("runs no tools on its workers");
  }
  expect((await api.call("GET", `/v1/sessions/${sessionId}`)).status).toBe(404);
  const schedule = await api.call("POST", "/v1/schedules", {
    json: { scheduleId: uniqueName("sched"), every: "1h", text: "nightly" },
  });
  expectProblem(schedule, 400, "environment-required");

  // Naming one of the tenant's environments passes the check (and an unknown one is 404 as always).
  const name = uniqueName("env").slice(0, 60);
  expect((await api.call("POST", "/v1/environments", { json: { name } })).status).toBe(201);
  const unknown = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: { text: "go", environment: "nowhere" },
  });
  expectProblem(unknown, 404, "environment-not-found");
  const named = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: { text: "[scenario:no-tools] hello", environment: name },
  });
  expect(named.status).toBe(202);
});

test("a run that reaches such a worker anyway gets an error result: the command never runs", async () => {
  api.stage.llm.addScenario("worker-tools-off", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo ran > ran.txt" } }] }],
    after: { text: "done" },
  });
  const ref = api.stage.newSession();
  // Past the API, as a run started before the switch was turned on.
  await api.stage.runs.deliver(
    ref,
    { text: "[scenario:worker-tools-off] go", mode: "auto" },
    api.stage.settings(),
  );
  expect((await api.stage.result(ref)).status).toBe("completed");
  const results = messagesOf(await expectIntactSession(api.stage, ref)).filter(
    (message) => message.role === "toolResult",
  );
  expect(results).toHaveLength(1);
  expect(results[0]).toMatchObject({
    isError: true,
    content: [{ type: "text", text: WORKER_TOOLS_OFF_TEXT }],
  });
  expect(existsSync(join(api.stage.workspaceRoot, ref.tenantId, ref.sessionId, "ran.txt"))).toBe(false);
});
