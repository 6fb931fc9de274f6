/**
 * `keel schedule` as a subprocess against a live API on the real Temporal and S3 servers: create
 * (an interval, a named session, run options, approvals that wait), list, trigger, show, pause,
 * resume, delete, and the usage errors.
 */
import { firingSessionId } from "../../../src/workflows/schedules";
import { uniqueName } from "../../support/integration-env";
import { createRunStage, eventually, messagesOf, type RunStage } from "../../support/run-harness";
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

// Every test starts several `keel` processes (tsx each) on a shared 2-core machine.
jest.setTimeout(180_000);

const keel = (args: string[]) => runKeel(args, env);

test("create, list, trigger, show, pause, resume and delete from the command line", async () => {
  const id = uniqueName("cli-sched");
  const sessionId = uniqueName("cli-session");
  const created = await keel([
    "schedule",
    "create",
    "every 1d",
    "nightly check",
    "--id",
    id,
    "--session",
    sessionId,
    "--overlap",
    "buffer-one",
    "--paused",
    "--max-turns",
    "3",
  ]);
  expect(created).toMatchObject({ code: 0, stderr: "" });
  expect(created.stdout).toContain(`created schedule ${id}  every 1d  paused`);
  expect(created.stdout).toContain(`temporal schedule: keel-schedule/${stage.tenantId}/${id}`);

  const listed = await eventually(async () => {
    const result = await keel(["schedule", "list"]);
    return result.stdout.includes(id) ? result : undefined;
  });
  expect(listed.stdout).toContain(`${id}  every 1d  paused  "nightly check"`);

  expect(await keel(["schedule", "trigger", id])).toMatchObject({
    code: 0,
    stdout: `fired schedule ${id}\n`,
  });
  const shown = await eventually(async () => {
    const result = await keel(["schedule", "show", id, "--json"]);
    const view = JSON.parse(result.stdout);
    return view.recentRuns.length > 0 && view.runningRuns.length === 0 ? view : undefined;
  });
  expect(shown).toMatchObject({ sessionId, overlap: "buffer-one", text: "nightly check" });
  const messages = messagesOf(await stage.entries({ tenantId: stage.tenantId, sessionId }));
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant"]);

  expect((await keel(["schedule", "resume", id])).stdout).toContain("active");
  expect((await keel(["schedule", "pause", id, "--note", "holidays"])).stdout).toContain("paused (holidays)");
  expect(await keel(["schedule", "delete", id])).toMatchObject({
    code: 0,
    stdout: `deleted schedule ${id}\n`,
  });
  const gone = await keel(["schedule", "show", id]);
  expect(gone.code).toBe(3);
  expect(gone.stderr).toContain("No such schedule");
});

test("--on-approval wait: a call the policy asks about waits for an approval up to the timeout, then is refused", async () => {
  const scenario = uniqueName("cli-ask");
  stage.llm.addScenario(scenario, {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo nightly" } }] }],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const id = uniqueName("cli-wait");
  const created = await keel([
    "schedule",
    "create",
    "1d",
    `[scenario:${scenario}] go`,
    "--id",
    id,
    "--paused",
    "--ask",
    "bash",
    "--on-approval",
    "wait",
    "--approval-timeout",
    "15s",
    "--json",
  ]);
  expect(created.code).toBe(0);
  expect(JSON.parse(created.stdout)).toMatchObject({ onApproval: "wait", every: "1d" });
  await keel(["schedule", "trigger", id]);
  // Read from Temporal directly: a `keel` process per poll is slower than the approval window.
  const schedule = stage.client.schedule.getHandle(`keel-schedule/${stage.tenantId}/${id}`);
  const firing = await eventually(
    async () => (await schedule.describe()).info.recentActions[0]?.action.workflow,
  );
  const ref = {
    tenantId: stage.tenantId,
    sessionId: firingSessionId(
      { tenantId: stage.tenantId, scheduleId: id },
      { workflowId: firing.workflowId, runId: firing.firstExecutionRunId },
    )!,
  };
  await eventually(async () =>
    (await stage.runs.state(ref))?.status === "waiting_approval" ? true : undefined,
  );
  expect((await stage.result(ref)).status).toBe("completed");
  const toolResult = messagesOf(await stage.entries(ref)).find((message) => message.role === "toolResult");
  expect(toolResult).toMatchObject({ isError: true });
  await keel(["schedule", "delete", id]);
});

test("usage errors: a timing that is neither cron nor interval, an unknown overlap policy, no subcommand", async () => {
  expect((await keel(["schedule", "create", "soon", "x"])).code).toBe(2);
  expect((await keel(["schedule", "create", "1h", "x", "--overlap", "all"])).code).toBe(2);
  expect((await keel(["schedule"])).code).toBe(2);
});
