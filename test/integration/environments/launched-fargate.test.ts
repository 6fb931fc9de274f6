/**
 * The Fargate launcher through the real stack: the API over HTTP, Temporal, S3, and a worker
 * process with KEEL_LAUNCHER=fargate whose ECS client talks to a local stand-in for the ECS API
 * (AWS_ENDPOINT_URL_ECS). The stand-in plays each task it is asked to run as a `keel runner`
 * process given exactly what a Fargate task would get: the container overrides' arguments and
 * variables, plus the runner task definition's own environment (KEEL_SANDBOX=off). So the runner
 * works from what the launcher sends and nothing else. Not real ECS.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { join, resolve } from "node:path";
import type { ServerType } from "@hono/node-server";
import { startApiServer } from "../../../src/api/server";
import { startedByFor } from "../../../src/environments/launchers/fargate";
import { EnvironmentStore } from "../../../src/environments/store";
import { ToolCallMarkers } from "../../../src/store/tool-call-markers";
import { FakeEcs } from "../../support/fake-ecs";
import { s3Client, s3Settings, testTmpDir, uniqueName } from "../../support/integration-env";
import { eventually, expectIntactSession, messagesOf, type WorkerProcess } from "../../support/run-harness";
import { type ApiStage, createApiStage } from "../api/api-stage";

const IDLE_SECONDS = 4;
const PROJECT_ROOT = resolve(__dirname, "../../..");
/** The worker's own AWS credentials (for ECS): they must never reach a task. */
const WORKER_AWS = {
  AWS_ACCESS_KEY_ID: "AKIAWORKERWORKER0001",
  AWS_SECRET_ACCESS_KEY: "worker-secret-access-key",
};

interface ContainerOverride {
  name: string;
  command: string[];
  environment: Array<{ name: string; value: string }>;
}

let api: ApiStage;
let server: ServerType;
let worker: WorkerProcess;
const runners = new Map<string, ChildProcess>();
const runnerOutput = new Map<string, string>();
const ecs = new FakeEcs({
  onRun: (task, request) => {
    const [override] = (request.overrides as { containerOverrides: ContainerOverride[] }).containerOverrides;
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(PROJECT_ROOT, "src/cli/main.ts"), "runner", ...(override?.command ?? [])],
      {
        cwd: PROJECT_ROOT,
        stdio: ["ignore", "pipe", "pipe"],
        env: {
          PATH: "/usr/local/bin:/usr/bin:/bin",
          HOME: mkdtempSync(join(testTmpDir(), "fargate-task-")),
          // The runner task definition's environment (infra/lib/runners.ts).
          KEEL_SANDBOX: "off",
          ...Object.fromEntries((override?.environment ?? []).map(({ name, value }) => [name, value])),
        },
      },
    );
    task.lastStatus = "RUNNING";
    runners.set(task.taskArn, child);
    let output = "";
    const keep = (chunk: Buffer) => {
      output += chunk.toString();
      runnerOutput.set(task.taskArn, output);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    child.once("exit", () => {
      runners.delete(task.taskArn);
      ecs.exit(task.taskArn);
    });
  },
  onStop: (task) => runners.get(task.taskArn)?.kill("SIGTERM"),
});
const s3 = s3Client();
const environments = new EnvironmentStore(s3, s3Settings().bucket, s3Settings().prefix);

beforeAll(async () => {
  const settings = s3Settings();
  const endpoint = await ecs.start();
  api = await createApiStage({
    withWorker: false,
    overrides: { environments: { store: environments, markers: new ToolCallMarkers(s3, settings) } },
  });
  const started = await startApiServer(api.app, 0);
  server = started.server;
  worker = await api.stage.startWorker({
    KEEL_LAUNCHER: "fargate",
    KEEL_LAUNCHER_API_URL: `http://127.0.0.1:${started.port}`,
    KEEL_LAUNCHER_IDLE_SECONDS: String(IDLE_SECONDS),
    KEEL_LAUNCHER_FARGATE_CLUSTER: "runners-cluster",
    KEEL_LAUNCHER_FARGATE_TASK_DEFINITION: "runner-task:1",
    KEEL_LAUNCHER_FARGATE_SUBNETS: "subnet-0123456789abcdef0",
    KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS: "sg-0123456789abcdef0",
    AWS_ENDPOINT_URL_ECS: endpoint,
    AWS_REGION: "us-east-1",
    ...WORKER_AWS,
  });
}, 240_000);

afterAll(async () => {
  await api?.close();
  for (const child of runners.values()) child.kill("SIGKILL");
  if (server) await new Promise((done) => server.close(done));
  await ecs.stop();
  s3.destroy();
});

jest.setTimeout(180_000);

function toolTexts(entries: Awaited<ReturnType<typeof api.stage.entries>>): string[] {
  return messagesOf(entries).flatMap((message) =>
    message.role === "toolResult"
      ? [message.content.map((block) => (block.type === "text" ? block.text : "")).join("")]
      : [],
  );
}

async function run(ref: { tenantId: string; sessionId: string }, environment: string, scenario: string) {
  await api.stage.runs.deliver(
    ref,
    { text: `[scenario:${scenario}] go`, mode: "auto" },
    api.stage.settings({ environment }),
  );
  return api.stage.result(ref);
}

async function tokenCount(environment: string): Promise<number> {
  const shown = await api.call("GET", `/v1/environments/${environment}`);
  return (shown.body.tokens as unknown[]).length;
}

test("a Fargate task per session runs its calls from the API URL and its token alone; idle stop, a new task restores the workspace; shutdown stops it", async () => {
  const environment = uniqueName("fargate").slice(0, 60);
  expect(
    (await api.call("POST", "/v1/environments", { json: { name: environment, kind: "launched" } })).status,
  ).toBe(201);
  api.stage.llm.addScenario("fargate-two-calls", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "notes.txt", content: "kept\n" } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "cat notes.txt; echo on-a-task" } }] },
      { text: "first message done" },
      { toolCalls: [{ name: "bash", arguments: { command: "cat notes.txt; echo again" } }] },
    ],
    after: { text: "done" },
  });
  const ref = api.stage.newSession();
  const startedBy = startedByFor({ tenantId: ref.tenantId, environment, sessionId: ref.sessionId });
  const runsOfSession = () => ecs.calls("RunTask").filter((call) => call.body.startedBy === startedBy);

  const first = await run(ref, environment, "fargate-two-calls");
  expect(first.status).toBe("completed");
  expect(toolTexts(await expectIntactSession(api.stage, ref))[1]).toContain("kept\non-a-task");
  // Two calls, one task; nothing ran in a workspace of the worker's.
  expect(runsOfSession()).toHaveLength(1);
  expect(existsSync(join(api.stage.workspaceRoot, ref.tenantId, ref.sessionId))).toBe(false);

  // What the task was given: the runner's arguments, the API URL and a token — nothing of the worker's.
  const [request] = runsOfSession();
  const overrides = request?.body.overrides as { containerOverrides: ContainerOverride[] } | undefined;
  const [override] = overrides?.containerOverrides ?? [];
  expect(override?.command).toEqual([
    "--env",
    environment,
    "--snapshots",
    "--idle-exit",
    String(IDLE_SECONDS),
  ]);
  expect(override?.environment.map(({ name }) => name)).toEqual(["KEEL_API_URL", "KEEL_RUNNER_TOKEN"]);
  const workerValues = [
    ...Object.values(WORKER_AWS),
    s3Settings().bucket,
    s3Settings().secretAccessKey,
    s3Settings().endpoint,
    "local-key",
  ].filter((value): value is string => Boolean(value));
  for (const value of workerValues)
    expect({ value, sent: request?.raw.includes(value) }).toEqual({ value, sent: false });

  // Idle: the runner exits, ECS reports the task STOPPED.
  const firstTask = [...ecs.tasks.values()].find((task) => task.startedBy === startedBy);
  await eventually(
    async () => (firstTask?.lastStatus === "STOPPED" ? true : undefined),
    (IDLE_SECONDS + 20) * 1000,
  );
  expect(runnerOutput.get(firstTask?.taskArn ?? "")).toContain("idle: runner stops");

  // The session's next message gets a new task, which restores the workspace; the first token is revoked.
  const second = await run(ref, environment, "fargate-two-calls");
  expect(second.status).toBe("completed");
  expect(toolTexts(await api.stage.entries(ref)).at(-1)).toContain("kept\nagain");
  expect(runsOfSession()).toHaveLength(2);
  await eventually(async () => ((await tokenCount(environment)) === 1 ? true : undefined), 40_000);

  // Worker shutdown stops its task and revokes the token.
  await worker.stop();
  expect(ecs.calls("StopTask").map((call) => call.body.task)).toContain(
    [...ecs.tasks.values()].filter((task) => task.startedBy === startedBy).at(-1)?.taskArn,
  );
  expect(await tokenCount(environment)).toBe(0);
});
