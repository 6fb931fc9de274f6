/**
 * The Lambda worker with KEEL_OTEL_ENDPOINT, against a real receiver (Jaeger, built by `npm run
 * ensure`): a run served by one invocation of the handler (`src/worker/lambda.ts`, with a fake
 * Lambda context, as test/integration/infra/lambda-worker.test.ts runs it) has its workflow,
 * activity, model and tool spans and Keel's metrics in Jaeger as soon as the invocation returned.
 * Batched exports are set to wait a minute here (`OTEL_BSP_SCHEDULE_DELAY`,
 * `KEEL_OTEL_METRICS_INTERVAL_MS`), so only the handler's flush can have sent them: a frozen
 * Lambda environment would hold them until its next invocation.
 */
import { execFile } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import {
  ensureJaeger,
  JAEGER_BUILD_TIMEOUT_MS,
  type JaegerServer,
  startJaeger,
} from "../../../src/cli/devstack/jaeger-server";
import type { LambdaContext } from "../../../src/worker/lambda";
import { temporalAddress, temporalNamespace, testTmpDir, uniqueName } from "../../support/integration-env";
import { createRunStage, eventually, type RunStage } from "../../support/run-harness";

jest.setTimeout(180_000);

/** Remaining time the fake context reports at the start of the invocation (7 s go to draining). */
const INVOCATION_MS = 20_000;
/** Longer than the whole test: nothing is exported by a batch timer. */
const BATCH_DELAY_MS = "600000";
/** What the receiver itself takes to store what it got (Jaeger batches for 200 ms). */
const RECEIVER_MS = 3_000;

let jaeger: JaegerServer;
let stage: RunStage;
/** In its own module registry: `runWorker` installs a Temporal Runtime, as in a fresh environment. */
let handler: typeof import("../../../src/worker/lambda").handler;

const deploymentName = uniqueName("keel-lambda-traced");
const buildId = "build-1";

// Jaeger is built the first time a tracing test needs it (`npm run ensure` leaves it out).
beforeAll(() => ensureJaeger(process.env), JAEGER_BUILD_TIMEOUT_MS);

beforeAll(async () => {
  const dir = join(testTmpDir(), uniqueName("jaeger-lambda"));
  mkdirSync(dir, { recursive: true });
  // The traced bundle as the Lambda package builds it; the handler must pick it over the plain one.
  const tracedBundle = join(dir, "workflow-bundle.traced.js");
  const bundle = promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "infra/bundling/bundle-workflows.ts", "--traced", tracedBundle],
    { cwd: resolve(__dirname, "../../..") },
  );
  // Settle the bundling even when Jaeger cannot start: a build left running would outlive the suite.
  const started = await Promise.allSettled([startJaeger({ dataDir: dir }), bundle, createRunStage()]);
  for (const result of started) if (result.status === "rejected") throw result.reason;
  jaeger = (started[0] as PromiseFulfilledResult<JaegerServer>).value;
  stage = (started[2] as PromiseFulfilledResult<RunStage>).value;
  jest.isolateModules(() => {
    handler = require("../../../src/worker/lambda").handler;
  });
  Object.assign(process.env, {
    KEEL_TEMPORAL_ADDRESS: temporalAddress(),
    KEEL_TEMPORAL_NAMESPACE: temporalNamespace(),
    KEEL_TASK_QUEUE: stage.taskQueue,
    KEEL_WORKFLOW_BUNDLE_TRACED: tracedBundle,
    KEEL_WORKSPACE_ROOT: stage.workspaceRoot,
    KEEL_WORKER_DEPLOYMENT_NAME: deploymentName,
    KEEL_WORKER_BUILD_ID: buildId,
    KEEL_OTEL_ENDPOINT: jaeger.otlpEndpoint,
    KEEL_OTEL_METRICS_INTERVAL_MS: BATCH_DELAY_MS,
    OTEL_BSP_SCHEDULE_DELAY: BATCH_DELAY_MS,
    OPENAI_API_KEY: "local-key",
    OPENAI_BASE_URL: stage.llm.openaiBaseURL,
    ANTHROPIC_API_KEY: "local-key",
    ANTHROPIC_BASE_URL: stage.llm.anthropicBaseURL,
  });
  await stage.client.workflowService.setWorkerDeploymentCurrentVersion({
    namespace: temporalNamespace(),
    deploymentName,
    buildId,
    identity: "lambda-traces-test",
    allowNoPollers: true,
    ignoreMissingTaskQueues: true,
  });
});

afterAll(async () => {
  await stage?.close();
  await jaeger?.process.stop();
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

interface JaegerSpan {
  spanID: string;
  operationName: string;
  references: { refType: string; spanID: string }[];
  processID: string;
}
interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

async function jaegerGet<T>(path: string): Promise<T> {
  const response = await fetch(`${jaeger.uiUrl}${path}`);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return ((await response.json()) as { data: T }).data;
}

test("a run served by a Lambda invocation has its spans and metrics at the receiver when the invocation returns", async () => {
  stage.llm.addScenario("lambda-traced", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "done" },
  });
  const invocation = handler({}, fakeContext(Date.now() + INVOCATION_MS));
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "[scenario:lambda-traced] list the files", mode: "auto" },
    stage.settings(),
  );
  expect((await stage.result(ref)).status).toBe("completed");
  await invocation;

  const expected = [
    "RunWorkflow:agentRun",
    "StartActivity:llmTurn",
    "RunActivity:llmTurn",
    "chat local-chat",
    "RunActivity:executeTool",
    "execute_tool ls",
  ];
  const trace = await eventually(
    async () => {
      const traces = await jaegerGet<JaegerTrace[]>(
        `/api/traces?service=keel-worker&tags=${encodeURIComponent(JSON.stringify({ "keel.session_id": ref.sessionId }))}`,
      );
      const found = traces[0] && (await jaegerGet<JaegerTrace[]>(`/api/traces/${traces[0].traceID}`))[0];
      const names = new Set(found?.spans.map((span) => span.operationName));
      return found && expected.every((name) => names.has(name)) ? found : undefined;
    },
    RECEIVER_MS,
    "the run's spans in Jaeger right after the invocation returned",
  );
  const byId = new Map(trace.spans.map((span) => [span.spanID, span]));
  const parentOf = (span: JaegerSpan) =>
    byId.get(span.references.find((r) => r.refType === "CHILD_OF")?.spanID ?? "");
  const named = (name: string) => trace.spans.find((span) => span.operationName === name) as JaegerSpan;
  // One tree, made by the traced bundle: the activities under the workflow, the calls under them.
  expect(parentOf(parentOf(named("RunActivity:llmTurn")) as JaegerSpan)).toBe(named("RunWorkflow:agentRun"));
  expect(parentOf(named("chat local-chat"))?.operationName).toBe("RunActivity:llmTurn");
  expect(parentOf(named("execute_tool ls"))?.operationName).toBe("RunActivity:executeTool");
  expect(trace.processes[named("RunWorkflow:agentRun").processID]?.serviceName).toBe("keel-worker");

  // Keel's metrics went out with the same flush.
  const metrics = await eventually(
    async () => {
      const text = await (await fetch(jaeger.metricsUrl)).text();
      return text.includes("keel_runs") && text.includes("keel_tool_duration") ? text : undefined;
    },
    RECEIVER_MS,
    "the run's metrics right after the invocation returned",
  );
  expect(metrics).toMatch(/keel_runs[^\n]*keel_run_outcome="completed"/);
  expect(metrics).toMatch(/keel_model_tokens/);
});
