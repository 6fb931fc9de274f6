/**
 * The Fargate launcher through the real ECS SDK client, against a local server that speaks ECS's
 * JSON protocol (awsJson1_1, `X-Amz-Target: AmazonEC2ContainerServiceV20141113.<Operation>`) and
 * keeps tasks in memory. Not real ECS: what ECS does with the requests is this fake's guess.
 */
import { ECSClient } from "@aws-sdk/client-ecs";
import {
  FargateLauncher,
  type FargateLauncherOptions,
  startedByFor,
} from "../../../src/environments/launchers/fargate";
import {
  type LauncherTokens,
  type LaunchRequest,
  launchedMcpSettings,
} from "../../../src/environments/launchers/types";
import { mcpSettingsFromEnv } from "../../../src/mcp/policy";
import { FakeEcs } from "../../support/fake-ecs";

/** Tokens issued and revoked, as the environment store would keep them. */
class FakeTokens implements LauncherTokens {
  readonly issued: Array<{
    tenantId: string;
    environment: string;
    sessionId?: string;
    token: string;
    tokenId: string;
  }> = [];
  readonly revoked: string[] = [];
  private next = 0;

  async issueToken(tenantId: string, environment: string, options: { sessionId?: string } = {}) {
    const tokenId = `t${++this.next}`;
    const token = `keel_rt_${tokenId}_secret${this.next}`;
    this.issued.push({ tenantId, environment, sessionId: options.sessionId, token, tokenId });
    return { token, tokenId };
  }

  async revoke(_tenantId: string, _environment: string, tokenId: string): Promise<boolean> {
    this.revoked.push(tokenId);
    return true;
  }
}

const SESSION: LaunchRequest = { tenantId: "acme", environment: "ci", sessionId: "s1" };
/** What a worker's environment holds and a runner must never get. */
const WORKER_SECRETS = {
  AWS_ACCESS_KEY_ID: "AKIAWORKERWORKER0001",
  AWS_SECRET_ACCESS_KEY: "worker-secret-access-key",
  AWS_SESSION_TOKEN: "worker-session-token",
  KEEL_TEMPORAL_ADDRESS: "temporal.internal.example:7233",
  KEEL_TEMPORAL_API_KEY: "worker-temporal-api-key",
  KEEL_S3_BUCKET: "worker-bucket-name",
  OPENAI_API_KEY: "sk-worker-openai-key",
  ANTHROPIC_API_KEY: "sk-ant-worker-key",
};

let ecsFake: FakeEcs;
let tokens: FakeTokens;
let endpoint: string;
const launchers: FargateLauncher[] = [];
const saved: Record<string, string | undefined> = {};

beforeEach(async () => {
  ecsFake = new FakeEcs();
  tokens = new FakeTokens();
  endpoint = await ecsFake.start();
  for (const [name, value] of Object.entries(WORKER_SECRETS)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
});

afterEach(async () => {
  for (const launcher of launchers.splice(0)) await launcher.close();
  await ecsFake.stop();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

function launcher(overrides: Partial<FargateLauncherOptions> = {}): FargateLauncher {
  const created = new FargateLauncher({
    ecs: new ECSClient({
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "AKIATEST", secretAccessKey: "test" },
    }),
    cluster: "keel-runners",
    taskDefinition: "keel-runner:3",
    container: "runner",
    subnets: ["subnet-0123456789abcdef0"],
    securityGroups: ["sg-0123456789abcdef0"],
    assignPublicIp: false,
    apiUrl: "https://api.keel.example",
    tokens,
    idleMs: 120_000,
    recheckMs: 0,
    pollMs: 0,
    log: () => undefined,
    ...overrides,
  });
  launchers.push(created);
  return created;
}

test("RunTask carries the task's settings and, of the worker's, only the API URL and a token of the session", async () => {
  await launcher().ensure(SESSION);

  const [run] = ecsFake.calls("RunTask");
  expect(run?.body).toMatchObject({
    cluster: "keel-runners",
    taskDefinition: "keel-runner:3",
    launchType: "FARGATE",
    count: 1,
    startedBy: startedByFor(SESSION),
    clientToken: "t1",
    networkConfiguration: {
      awsvpcConfiguration: {
        subnets: ["subnet-0123456789abcdef0"],
        securityGroups: ["sg-0123456789abcdef0"],
        assignPublicIp: "DISABLED",
      },
    },
  });
  expect(tokens.issued).toEqual([
    expect.objectContaining({ tenantId: "acme", environment: "ci", sessionId: "s1", tokenId: "t1" }),
  ]);
  const overrides = run?.body.overrides as { containerOverrides: unknown[] };
  expect(overrides).toEqual({
    containerOverrides: [
      {
        name: "runner",
        command: ["--env", "ci", "--snapshots", "--idle-exit", "120"],
        environment: [
          { name: "KEEL_API_URL", value: "https://api.keel.example" },
          { name: "KEEL_RUNNER_TOKEN", value: tokens.issued[0]?.token },
        ],
      },
    ],
  });
  // Nothing of the worker's environment anywhere in what ECS received (the request's own signing
  // uses the client's credentials, which are not the worker's here).
  for (const received of ecsFake.received)
    for (const [name, value] of Object.entries(WORKER_SECRETS)) {
      expect({ name, found: received.raw.includes(value) }).toEqual({ name, found: false });
    }
  expect(startedByFor(SESSION).length).toBeLessThanOrEqual(36);
});

test("the worker's MCP mounts and hosts go with the task, as they are; none of its other variables do", async () => {
  const workerEnv = {
    KEEL_MCP_MOUNTS: "/opt/mcp/node:/opt/mcp/python",
    KEEL_MCP_HOSTS: "tracker.internal,10.0.0.7",
    TRACKER_TOKEN: "worker-tracker-token",
  };
  const { mounts, policy } = mcpSettingsFromEnv(workerEnv);
  await launcher({ mcpSettings: launchedMcpSettings(mounts, policy.privateHosts) }).ensure(SESSION);
  const [run] = ecsFake.calls("RunTask");
  const overrides = run?.body.overrides as
    | { containerOverrides: Array<{ environment: unknown }> }
    | undefined;
  const [container] = overrides?.containerOverrides ?? [];
  expect(container?.environment).toEqual([
    { name: "KEEL_API_URL", value: "https://api.keel.example" },
    { name: "KEEL_RUNNER_TOKEN", value: tokens.issued[0]?.token },
    { name: "KEEL_MCP_MOUNTS", value: "/opt/mcp/node:/opt/mcp/python" },
    { name: "KEEL_MCP_HOSTS", value: "tracker.internal,10.0.0.7" },
  ]);
  for (const received of ecsFake.received) {
    expect(received.raw).not.toContain("worker-tracker-token");
    expect(received.raw).not.toContain("TRACKER_TOKEN");
  }
});

test("ensure for a session whose task is pending or running starts no second task", async () => {
  const launched = launcher();
  await Promise.all([launched.ensure(SESSION), launched.ensure(SESSION)]);
  await launched.ensure(SESSION);
  const [task] = ecsFake.tasks.values();
  if (task) task.lastStatus = "RUNNING";
  await launched.ensure(SESSION);

  expect(ecsFake.calls("RunTask")).toHaveLength(1);
  // Its own task is asked about by its ARN (ListTasks may lag behind a task just started).
  expect(ecsFake.calls("ListTasks")).toHaveLength(1);
  expect(ecsFake.calls("DescribeTasks").length).toBeGreaterThanOrEqual(2);
  expect(tokens.issued).toHaveLength(1);
  expect(tokens.revoked).toEqual([]);
});

test("its own task is asked about by ARN: a ListTasks lagging behind a task just started revokes and starts nothing", async () => {
  const launched = launcher();
  await launched.ensure(SESSION);
  ecsFake.listTasksLags = true;
  await launched.ensure(SESSION);
  await launched.ensure(SESSION);
  expect(ecsFake.calls("RunTask")).toHaveLength(1);
  expect(tokens.revoked).toEqual([]);
});

test("within recheckMs ensure answers without asking ECS (it is asked every half second while a call waits)", async () => {
  const launched = launcher({ recheckMs: 60_000 });
  await launched.ensure(SESSION);
  for (let i = 0; i < 5; i++) await launched.ensure(SESSION);
  expect(ecsFake.received.map((call) => call.operation)).toEqual(["ListTasks", "RunTask"]);
});

test("a STOPPED task gets its token revoked, and the next ensure starts a new task", async () => {
  const launched = launcher();
  await launched.ensure(SESSION);
  const first = launched.tasks()["acme/ci/s1"] as string;
  ecsFake.exit(first);

  await launched.ensure(SESSION);
  expect(tokens.revoked).toEqual(["t1"]);
  expect(ecsFake.calls("RunTask")).toHaveLength(2);
  const second = launched.tasks()["acme/ci/s1"];
  expect(second).toBeDefined();
  expect(second).not.toBe(first);
  expect(tokens.issued.map((issued) => issued.tokenId)).toEqual(["t1", "t2"]);
});

test("idle stop: the poll notices the STOPPED task and revokes its token without any ensure", async () => {
  const launched = launcher();
  await launched.ensure(SESSION);
  await launched.ensure({ ...SESSION, sessionId: "s2" });
  ecsFake.exit(launched.tasks()["acme/ci/s1"] as string);

  await launched.reapStopped();
  expect(ecsFake.calls("DescribeTasks")).toHaveLength(1);
  expect(tokens.revoked).toEqual(["t1"]);
  expect(Object.keys(launched.tasks())).toEqual(["acme/ci/s2"]);
  // A task ECS could not describe for another reason is asked about again, its token kept.
  ecsFake.describeFailure = "ECS busy";
  await launched.reapStopped();
  expect(tokens.revoked).toEqual(["t1"]);
  ecsFake.describeFailure = undefined;
  // A task ECS no longer knows counts as stopped.
  ecsFake.tasks.clear();
  await launched.reapStopped();
  expect(tokens.revoked).toEqual(["t1", "t2"]);
});

test("the poll runs on its own every pollMs", async () => {
  const launched = launcher({ pollMs: 50 });
  await launched.ensure(SESSION);
  ecsFake.exit(launched.tasks()["acme/ci/s1"] as string);
  const deadline = Date.now() + 5_000;
  while (tokens.revoked.length === 0 && Date.now() < deadline)
    await new Promise((done) => setTimeout(done, 20));
  expect(tokens.revoked).toEqual(["t1"]);
});

test("another worker's launcher finds the session's task and starts none (an activity retried elsewhere)", async () => {
  const first = launcher();
  const second = launcher();
  await first.ensure(SESSION);
  await second.ensure(SESSION);

  expect(ecsFake.calls("RunTask")).toHaveLength(1);
  expect(tokens.issued).toHaveLength(1);
  // It neither stops nor revokes what it did not start.
  await second.close();
  expect(ecsFake.calls("StopTask")).toHaveLength(0);
  expect(tokens.revoked).toEqual([]);
});

test("another worker's tasks are forgotten by the poll once stale: the launcher's memory stays bounded", async () => {
  const first = launcher();
  const second = launcher();
  await first.ensure(SESSION);
  await second.ensure(SESSION);
  const remembered = (launched: FargateLauncher) =>
    (launched as unknown as { known: Map<string, unknown> }).known.size;
  expect(remembered(second)).toBe(1);
  // recheckMs is 0 here: the poll drops the other worker's task, and keeps its own.
  await second.reapStopped();
  expect(remembered(second)).toBe(0);
  await first.reapStopped();
  expect(remembered(first)).toBe(1);
});

test("a RunTask answer lost on the way is retried with the same clientToken: one task", async () => {
  ecsFake.failNextRunTaskAnswer = true;
  await launcher().ensure(SESSION);

  const runs = ecsFake.calls("RunTask");
  expect(runs).toHaveLength(2);
  expect(runs.map((run) => run.body.clientToken)).toEqual(["t1", "t1"]);
  expect(ecsFake.tasks.size).toBe(1);
  expect(tokens.issued).toHaveLength(1);
});

test("a RunTask that starts no task fails ensure and revokes the token it was given", async () => {
  ecsFake.runTaskFailure = "RESOURCE:ENI";
  await expect(launcher().ensure(SESSION)).rejects.toThrow(/RESOURCE:ENI/);
  expect(tokens.revoked).toEqual(["t1"]);
});

test("close stops the tasks it started and revokes their tokens; ensure after close starts nothing", async () => {
  const launched = launcher();
  await launched.ensure(SESSION);
  await launched.ensure({ ...SESSION, sessionId: "s2" });
  await launched.close();

  expect(
    ecsFake
      .calls("StopTask")
      .map((call) => call.body.task)
      .sort(),
  ).toEqual([...ecsFake.tasks.keys()].sort());
  expect([...ecsFake.tasks.values()].every((task) => task.lastStatus === "STOPPED")).toBe(true);
  expect(tokens.revoked.sort()).toEqual(["t1", "t2"]);
  await launched.ensure({ ...SESSION, sessionId: "s3" });
  expect(ecsFake.calls("RunTask")).toHaveLength(2);
});
