/**
 * The Lambda worker entry (`src/worker/lambda.ts`) against the real Temporal dev server with a fake
 * Lambda context: one invocation picks up a run's workflow and activity tasks (tool calls
 * included, on the shared task queue), and returns before the invocation's deadline; a workspace
 * missing from the environment's disk is restored from its snapshot in S3; the MCP servers an
 * invocation started are closed when it returns.
 */
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { propagation, trace } from "@opentelemetry/api";
import { holderEpochPathOf } from "../../../src/activities/workspace-holder";
import { runWorkflowId } from "../../../src/contracts/runs";
import { indexPathOf } from "../../../src/store/workspace-tree";
import { lockPathOf, workspaceFor } from "../../../src/tools/workspace";
import type { LambdaContext } from "../../../src/worker/lambda";
import {
  temporalAddress,
  temporalNamespace,
  testTmpDir,
  uniqueName,
  workflowBundlePath,
} from "../../support/integration-env";
import { everythingServer, MCP_WORKER_ENV } from "../../support/mcp-servers";
import {
  createRunStage,
  eventually,
  expectIntactSession,
  messagesOf,
  modelCalled,
  type RunStage,
} from "../../support/run-harness";

jest.setTimeout(120_000);

/** Remaining time the fake context reports at the start of the invocation. */
const INVOCATION_MS = 30_000;

let stage: RunStage;
/**
 * Loaded in its own module registry: the integration setup already installed a Temporal Runtime
 * in the shared one, and `runWorker` installs its own, as it does in a fresh Lambda environment.
 */
let handler: typeof import("../../../src/worker/lambda").handler;

const deploymentName = uniqueName("keel-lambda");
const buildId = "build-1";

beforeAll(async () => {
  stage = await createRunStage();
  jest.isolateModules(() => {
    handler = require("../../../src/worker/lambda").handler;
  });
  Object.assign(process.env, {
    KEEL_TEMPORAL_ADDRESS: temporalAddress(),
    KEEL_TEMPORAL_NAMESPACE: temporalNamespace(),
    KEEL_TASK_QUEUE: stage.taskQueue,
    KEEL_WORKFLOW_BUNDLE: workflowBundlePath(),
    KEEL_WORKSPACE_ROOT: stage.workspaceRoot,
    KEEL_WORKER_DEPLOYMENT_NAME: deploymentName,
    KEEL_WORKER_BUILD_ID: buildId,
    OPENAI_API_KEY: "local-key",
    OPENAI_BASE_URL: stage.llm.openaiBaseURL,
    ANTHROPIC_API_KEY: "local-key",
    ANTHROPIC_BASE_URL: stage.llm.anthropicBaseURL,
    ...MCP_WORKER_ENV,
  });
  // What `temporal worker deployment set-current-version` does after a deploy: route the task
  // queue's work to this version (before any of its workers has polled).
  await stage.client.workflowService.setWorkerDeploymentCurrentVersion({
    namespace: temporalNamespace(),
    deploymentName,
    buildId,
    identity: "lambda-worker-test",
    allowNoPollers: true,
    ignoreMissingTaskQueues: true,
  });
});

afterAll(async () => {
  await stage?.close();
});

function fakeContext(deadline: number): LambdaContext {
  return {
    awsRequestId: uniqueName("request"),
    invokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:keel-worker:7",
    functionName: "keel-worker",
    functionVersion: "7",
    memoryLimitInMB: "2048",
    logGroupName: "/aws/lambda/keel-worker",
    logStreamName: "test",
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {},
    fail() {},
    succeed() {},
  } as LambdaContext;
}

test("one invocation runs a run's workflow and tool tasks, then returns before the deadline", async () => {
  stage.llm.addScenario("lambda-write-then-read", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "note.txt", content: "from lambda\n" } }] },
      { toolCalls: [{ name: "read", arguments: { path: "note.txt" } }] },
      { text: "The note says: {{lastToolResult}}" },
    ],
  });
  const started = Date.now();
  const deadline = started + INVOCATION_MS;
  const invocation = handler({}, fakeContext(deadline));
  // Delivery waits for the workflow to accept the message: the invocation must be polling.
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "[scenario:lambda-write-then-read] go", mode: "auto" },
    stage.settings(),
  );
  const result = await stage.result(ref);
  await invocation;
  const finished = Date.now();

  expect(result.status).toBe("completed");
  const messages = messagesOf(await stage.entries(ref));
  expect(messages.map((message) => message.role)).toEqual([
    "user",
    "assistant",
    "toolResult",
    "assistant",
    "toolResult",
    "assistant",
  ]);
  const last = messages.at(-1);
  expect(last?.role === "assistant" && last.content[0]).toEqual({
    type: "text",
    text: "The note says: from lambda",
  });
  // The worker stops polling ahead of the deadline (7 s buffer) and has drained by then.
  expect(finished).toBeLessThan(deadline);

  // Telemetry is off: the handler registered no tracer provider (spans are not recorded) and no
  // propagator (nothing goes into headers).
  expect(trace.getTracer("probe").startSpan("probe").isRecording()).toBe(false);
  expect(propagation.fields()).toEqual([]);

  // The run was processed by this worker deployment version.
  const description = await stage.client.workflow.getHandle(runWorkflowId(ref)).describe();
  const versioning = description.raw.workflowExecutionInfo?.versioningInfo;
  expect(versioning?.deploymentVersion).toMatchObject({ deploymentName, buildId });
});

/** What a fresh Lambda execution environment has of a session's workspace: nothing. */
function forgetLocalWorkspace(ref: { tenantId: string; sessionId: string }): void {
  const workspace = workspaceFor(stage.workspaceRoot, ref.tenantId, ref.sessionId);
  for (const path of [workspace.dir, indexPathOf(workspace.dir), lockPathOf(workspace)]) {
    rmSync(path, { recursive: true, force: true });
  }
}

test("the workspace comes back from S3 when the local copy is gone: within a run and for the next run", async () => {
  stage.llm.addScenario("lambda-lost-workspace", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "note.txt", content: "kept in s3\n" } }] },
      { toolCalls: [{ name: "read", arguments: { path: "note.txt" } }] },
      { text: "First read: {{lastToolResult}}" },
      { toolCalls: [{ name: "read", arguments: { path: "note.txt" } }] },
    ],
    after: { text: "Second read: {{lastToolResult}}" },
  });
  // The read's model call waits, so the local copy can go between the write's snapshot and the read.
  stage.llm.addFaults([
    { kind: "slow", match: { scenario: "lambda-lost-workspace", turn: 1 }, times: 1, latencyMs: 3_000 },
  ]);
  const invocation = handler({}, fakeContext(Date.now() + INVOCATION_MS));
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "[scenario:lambda-lost-workspace] go", mode: "auto" },
    stage.settings(),
  );
  await modelCalled(stage, "lambda-lost-workspace", 1);
  forgetLocalWorkspace(ref);
  expect((await stage.result(ref)).status).toBe("completed");
  const lastText = async () => {
    const last = messagesOf(await stage.entries(ref)).at(-1);
    return last?.role === "assistant" && last.content[0]?.type === "text" ? last.content[0].text : "";
  };
  expect(await lastText()).toBe("First read: kept in s3");

  // The next run claims the workspace afresh, on an environment that never held it.
  forgetLocalWorkspace(ref);
  await stage.runs.deliver(ref, { text: "read it again", mode: "auto" }, stage.settings());
  expect((await stage.result(ref)).status).toBe("completed");
  expect(await lastText()).toBe("Second read: kept in s3");
  await invocation;
});

test("an environment that kept an old copy of the workspace, edited since on another environment, works on the edited files", async () => {
  stage.llm.addScenario("lambda-stale-copy", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "note.txt", content: "first version\n" } }] },
      { toolCalls: [{ name: "edit", arguments: { path: "note.txt", oldText: "first", newText: "second" } }] },
      { toolCalls: [{ name: "read", arguments: { path: "note.txt" } }] },
    ],
    after: { text: "Read: {{lastToolResult}}" },
  });
  // The edit's and the read's model calls wait, so the local disk can be swapped in between.
  stage.llm.addFaults([
    { kind: "slow", match: { scenario: "lambda-stale-copy", turn: 1 }, times: 1, latencyMs: 3_000 },
    { kind: "slow", match: { scenario: "lambda-stale-copy", turn: 2 }, times: 1, latencyMs: 3_000 },
  ]);
  const invocation = handler({}, fakeContext(Date.now() + INVOCATION_MS));
  const ref = stage.newSession();
  const workspace = workspaceFor(stage.workspaceRoot, ref.tenantId, ref.sessionId);
  // Environment X's disk: the copy, its snapshot index and the holder epoch it took.
  const xFiles = [workspace.dir, indexPathOf(workspace.dir), holderEpochPathOf(workspace)];
  const xSaved = mkdtempSync(join(testTmpDir(), "lambda-x-"));
  await stage.runs.deliver(ref, { text: "[scenario:lambda-stale-copy] go", mode: "auto" }, stage.settings());

  // The write ran on X. The edit runs on environment Y, which never held the workspace.
  await modelCalled(stage, "lambda-stale-copy", 1);
  for (const [index, path] of xFiles.entries()) renameSync(path, join(xSaved, String(index)));
  rmSync(lockPathOf(workspace), { force: true });
  // The read runs on X again, with the copy X kept from before the edit.
  await modelCalled(stage, "lambda-stale-copy", 2);
  expect(readFileSync(join(workspace.dir, "note.txt"), "utf8")).toBe("second version\n");
  for (const path of xFiles) rmSync(path, { recursive: true, force: true });
  for (const [index, path] of xFiles.entries()) renameSync(join(xSaved, String(index)), path);
  expect(readFileSync(join(workspace.dir, "note.txt"), "utf8")).toBe("first version\n");

  expect((await stage.result(ref)).status).toBe("completed");
  const last = messagesOf(await expectIntactSession(stage, ref)).at(-1);
  expect(last?.role === "assistant" && last.content[0]).toEqual({
    type: "text",
    text: "Read: second version",
  });
  expect(readFileSync(join(workspace.dir, "note.txt"), "utf8")).toBe("second version\n");
  await invocation;
});

test("a workspace made from a directory source comes back on an environment that never held it, before any batch changed a file", async () => {
  const source = mkdtempSync(join(testTmpDir(), "lambda-source-"));
  writeFileSync(join(source, "source.txt"), "from the source folder\n");
  stage.llm.addScenario("lambda-source", {
    turns: [
      { toolCalls: [{ name: "read", arguments: { path: "source.txt" } }] },
      { toolCalls: [{ name: "read", arguments: { path: "source.txt" } }] },
    ],
    after: { text: "Read: {{lastToolResult}}" },
  });
  stage.llm.addFaults([
    { kind: "slow", match: { scenario: "lambda-source", turn: 1 }, times: 1, latencyMs: 3_000 },
  ]);
  const invocation = handler({}, fakeContext(Date.now() + INVOCATION_MS));
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "[scenario:lambda-source] go", mode: "auto" },
    stage.settings({ workspace: { type: "directory", path: source } }),
  );
  await modelCalled(stage, "lambda-source", 1);
  forgetLocalWorkspace(ref);
  expect((await stage.result(ref)).status).toBe("completed");
  const last = messagesOf(await stage.entries(ref)).at(-1);
  expect(last?.role === "assistant" && last.content[0]).toEqual({
    type: "text",
    text: "Read: from the source folder",
  });
  await invocation;
});

/** Processes whose command line holds `marker`. */
function processesWith(marker: string): string[] {
  return readdirSync("/proc").filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker);
    } catch {
      return false; // gone meanwhile
    }
  });
}

test("the MCP servers an invocation's calls started are closed when it returns", async () => {
  stage.llm.addScenario("lambda-mcp", {
    turns: [{ toolCalls: [{ name: "everything__echo", arguments: { message: "from lambda" } }] }],
    after: { text: "Result: {{lastToolResult}}" },
  });
  // server-everything reads its first argument only: the marker finds its process.
  const marker = uniqueName("lambda-mcp-marker");
  const server = everythingServer();
  const invocation = handler({}, fakeContext(Date.now() + INVOCATION_MS));
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "[scenario:lambda-mcp] go", mode: "auto" },
    stage.settings({ mcpServers: [{ ...server, args: [...(server.args ?? []), marker] }] }),
  );
  expect((await stage.result(ref)).status).toBe("completed");
  const last = messagesOf(await stage.entries(ref)).at(-1);
  expect(last?.role === "assistant" && last.content[0]).toEqual({
    type: "text",
    text: "Result: Echo: from lambda",
  });
  // Kept while the invocation polls (the connection serves the session's next call)...
  expect(processesWith(marker).length).toBeGreaterThan(0);
  await invocation;
  // ...and gone once it returned: closed then, so gone within moments (its sandbox's processes
  // exit after their parent on a loaded machine), not after the pool's idle minute.
  await eventually(async () => (processesWith(marker).length === 0 ? true : undefined), 10_000);
});
