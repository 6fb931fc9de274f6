/**
 * Traces and metrics against a real receiver (Jaeger, built by `npm run ensure`): a run started
 * through the API, whose worker (loading the traced bundle built as the image builds it) is killed
 * during the model call and replaced, arrives as one trace with the right parents across the API,
 * the first worker and the worker that took over (workflow spans included);
 * the takeover shows as a second attempt. Metrics sent to the same OTLP endpoint, Keel's and the
 * Temporal SDK's (the workers' Runtime), reach the Prometheus exporter inside Jaeger.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { Client, Connection } from "@temporalio/client";
import { historyFromJSON } from "@temporalio/common/lib/proto-utils";
import { Runtime, Worker } from "@temporalio/worker";
import {
  ensureJaeger,
  JAEGER_BUILD_TIMEOUT_MS,
  type JaegerServer,
  startJaeger,
} from "../../../src/cli/devstack/jaeger-server";
import { startTraceViewer } from "../../../src/cli/devstack/trace-viewer";
import { RunClient } from "../../../src/run-client/run-client";
import { keelDataConverter } from "../../../src/store/payload-storage";
import { clientTelemetryOptions } from "../../../src/telemetry/client";
import { startTelemetry, type Telemetry } from "../../../src/telemetry/sdk";
import { replayTelemetrySinks } from "../../../src/worker/telemetry";
import {
  s3Client,
  s3Settings,
  temporalAddress,
  temporalNamespace,
  testTmpDir,
  uniqueName,
} from "../../support/integration-env";
import { eventually, expectIntactSession } from "../../support/run-harness";
import { type ApiStage, createApiStage } from "../api/api-stage";

jest.setTimeout(240_000);

let jaeger: JaegerServer;
let telemetry: Telemetry;
let api: ApiStage;
let bundlePath: string;
let connection: Connection;
let s3: ReturnType<typeof s3Client>;

interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
  processID: string;
}
interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

// Jaeger is built the first time a tracing test needs it (`npm run ensure` leaves it out).
beforeAll(() => ensureJaeger(process.env), JAEGER_BUILD_TIMEOUT_MS);

beforeAll(async () => {
  const dir = join(testTmpDir(), uniqueName("jaeger"));
  mkdirSync(dir, { recursive: true });
  // The traced bundle as the image builds it (KEEL_WORKFLOW_BUNDLE_TRACED); the workers get it
  // beside the untraced test bundle and must pick it because telemetry is on.
  bundlePath = join(dir, "workflow-bundle.traced.js");
  const bundle = promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "infra/bundling/bundle-workflows.ts", "--traced", bundlePath],
    { cwd: resolve(__dirname, "../../..") },
  );
  // Settle the bundling even when Jaeger cannot start: a build left running would outlive the suite.
  const started = await Promise.allSettled([startJaeger({ dataDir: dir }), bundle]);
  if (started[0].status === "rejected") throw started[0].reason;
  if (started[1].status === "rejected") throw started[1].reason;
  jaeger = started[0].value;
  // This process is the API: its spans are the run's first ones.
  telemetry = startTelemetry({
    endpoint: jaeger.otlpEndpoint,
    serviceName: "keel-api",
    captureContent: false,
    metricsIntervalMs: 500,
  });
  s3 = s3Client();
  connection = await Connection.connect({ address: temporalAddress(), connectTimeout: "60 seconds" });
  const client = new Client({
    connection,
    namespace: temporalNamespace(),
    dataConverter: keelDataConverter(s3, s3Settings()),
    ...clientTelemetryOptions(),
  });
  api = await createApiStage({
    withWorker: false,
    overrides: {
      // The stage's client, with the trace interceptor; crashed workers are noticed in seconds.
      runs: async () => withQuickTimeouts(new RunClient(client, api.stage.taskQueue)),
    },
  });
});

afterAll(async () => {
  await api?.stage.stopWorkers();
  await api?.close();
  await telemetry?.shutdown();
  await connection?.close();
  s3?.destroy();
  await jaeger?.process.stop();
});

/** `runs` whose deliveries carry the short timeouts the crash tests use. */
function withQuickTimeouts(runs: RunClient): RunClient {
  const deliver = runs.deliver.bind(runs);
  runs.deliver = (ref, request, settings, options) =>
    deliver(
      ref,
      request,
      { ...settings, timeouts: { ...settings.timeouts, heartbeatMs: 4_000, toolScheduleToStartMs: 5_000 } },
      options,
    );
  return runs;
}

function tracedWorkerEnv(): Record<string, string> {
  return {
    KEEL_OTEL_ENDPOINT: jaeger.otlpEndpoint,
    KEEL_OTEL_METRICS_INTERVAL_MS: "500",
    KEEL_WORKFLOW_BUNDLE_TRACED: bundlePath,
  };
}

async function jaegerGet<T>(path: string): Promise<T> {
  const response = await fetch(`${jaeger.uiUrl}${path}`);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return ((await response.json()) as { data: T }).data;
}

const tag = (span: JaegerSpan, key: string) => span.tags.find((candidate) => candidate.key === key)?.value;

test("the traced bundle built as the image builds it holds the tracing interceptors", () => {
  const code = readFileSync(bundlePath, "utf8");
  expect(code).toContain("src/telemetry/workflow-interceptors.ts");
  expect(code).toContain("@temporalio/interceptors-opentelemetry/lib/workflow");
  expect(code).not.toMatch(/node_modules\/zod\//);
});

test("a run whose worker was killed mid-call is one trace: API, first worker, the worker that took over", async () => {
  api.stage.llm.addScenario("traced-crash", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "done" },
  });
  api.stage.llm.addFaults([
    { kind: "slow", match: { scenario: "traced-crash", turn: 1 }, times: 1, latencyMs: 20_000 },
  ]);
  const first = await api.stage.startWorker(tracedWorkerEnv());
  const sessionId = api.sessionId();
  const sent = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: { text: "[scenario:traced-crash] list the files" },
  });
  expect(sent.status).toBe(202);
  const ref = { tenantId: api.tenants.a, sessionId };
  // The first worker ran the first turn and the tool call, and is in the second model call.
  await eventually(
    async () =>
      api.stage.llm.journal().some((entry) => entry.scenario === "traced-crash" && entry.turn === 1)
        ? true
        : undefined,
    60_000,
  );
  // Its finished spans go out in batches every second: the crash comes once they arrived.
  await eventually(
    async () => {
      const traces = await jaegerGet<JaegerTrace[]>(
        `/api/traces?service=keel-worker&tags=${encodeURIComponent(JSON.stringify({ "keel.session_id": sessionId }))}`,
      );
      const names = traces.flatMap((found) => found.spans.map((span) => span.operationName));
      return names.includes("execute_tool ls") && names.includes("chat local-chat") ? true : undefined;
    },
    30_000,
    "the first worker's spans in Jaeger",
  );
  await first.kill();
  const second = await api.stage.startWorker(tracedWorkerEnv());
  expect((await api.stage.result(ref)).status).toBe("completed");
  // Tracing leaves the run's own random numbers (its entry ids) alone: the replayed run agrees
  // with the session the first worker wrote.
  await expectIntactSession(api.stage, ref);
  await telemetry.flush();

  const workflowId = `keel-run/${api.tenants.a}/${sessionId}`;
  const trace = await eventually(
    async () => {
      const traces = await jaegerGet<JaegerTrace[]>(
        `/api/traces?service=keel-api&tags=${encodeURIComponent(JSON.stringify({ "url.path": `/v1/sessions/${sessionId}/messages` }))}&limit=5`,
      );
      const found = traces[0];
      if (!found) return undefined;
      const full = (await jaegerGet<JaegerTrace[]>(`/api/traces/${found.traceID}`))[0];
      // Complete once the workflow span (ended by the second worker) and the answer's model call arrived.
      const names = full?.spans.map((span) => span.operationName) ?? [];
      return names.includes("RunWorkflow:agentRun") &&
        names.filter((n) => n === "chat local-chat").length >= 2
        ? full
        : undefined;
    },
    60_000,
    "the run's trace in Jaeger",
  );

  const byId = new Map(trace.spans.map((span) => [span.spanID, span]));
  const parentOf = (span: JaegerSpan) =>
    byId.get(span.references.find((r) => r.refType === "CHILD_OF")?.spanID ?? "");
  const serviceOf = (span: JaegerSpan) => trace.processes[span.processID]?.serviceName;
  const instanceOf = (span: JaegerSpan) =>
    trace.processes[span.processID]?.tags.find((t) => t.key === "service.instance.id")?.value;
  const named = (name: string) => trace.spans.filter((span) => span.operationName === name);

  // One tree: every span but the request's has its parent in the trace (the takeover's too).
  for (const span of trace.spans)
    if (span !== named("POST /v1/sessions/:sessionId/messages")[0]) expect(parentOf(span)).toBeDefined();

  // The API request is the root; the workflow's start is its child; the workflow runs under it.
  const request = named("POST /v1/sessions/:sessionId/messages")[0];
  expect(request && serviceOf(request)).toBe("keel-api");
  expect(request?.references).toEqual([]);
  const runWorkflow = named("RunWorkflow:agentRun")[0] as JaegerSpan;
  expect(serviceOf(runWorkflow)).toBe("keel-worker");
  let ancestor = parentOf(runWorkflow);
  while (ancestor && ancestor !== request) ancestor = parentOf(ancestor);
  expect(ancestor).toBe(request);
  expect(tag(runWorkflow, "workflowId")).toBe(workflowId);

  // Every activity span hangs under the workflow's StartActivity span of the same activity.
  const activities = trace.spans.filter((span) => span.operationName.startsWith("RunActivity:"));
  for (const activity of activities) {
    const parent = parentOf(activity);
    expect(parent?.operationName).toBe(activity.operationName.replace("RunActivity:", "StartActivity:"));
    expect(parentOf(parent as JaegerSpan)).toBe(runWorkflow);
  }

  // The first worker's finished work (the first model call, the tool call) is in the trace, from
  // another process than the second model call, which was a takeover: attempt 2 of its activity.
  const calls = named("chat local-chat");
  const firstCall = calls.find(
    (span) => tag(parentOf(span) as JaegerSpan, "temporal.activity.attempt") === 1,
  );
  const takenOver = calls.find(
    (span) => tag(parentOf(span) as JaegerSpan, "temporal.activity.attempt") === 2,
  );
  expect(firstCall && takenOver).toBeTruthy();
  const takeoverActivity = parentOf(takenOver as JaegerSpan) as JaegerSpan;
  expect(takeoverActivity.operationName).toBe("RunActivity:llmTurn");
  expect(tag(takeoverActivity, "temporal.activity.retry")).toBe(true);
  expect(instanceOf(takenOver as JaegerSpan)).not.toBe(instanceOf(firstCall as JaegerSpan));
  expect(instanceOf(takenOver as JaegerSpan)).toBe(instanceOf(runWorkflow));

  // Model calls carry the GenAI conventions (and no prompt content: capture is off).
  expect(Object.fromEntries((takenOver as JaegerSpan).tags.map((t) => [t.key, t.value]))).toMatchObject({
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "local-chat",
    "gen_ai.provider.name": expect.any(String),
    "gen_ai.usage.input_tokens": expect.any(Number),
    "gen_ai.usage.output_tokens": expect.any(Number),
    "keel.tenant_id": api.tenants.a,
  });
  expect(tag(takenOver as JaegerSpan, "gen_ai.input.messages")).toBeUndefined();
  expect(tag(firstCall as JaegerSpan, "gen_ai.response.finish_reasons")).toBeDefined();

  // The tool call: its own span under its activity, with name, replay class and outcome.
  const tool = named("execute_tool ls")[0] as JaegerSpan;
  expect(parentOf(tool)?.operationName).toBe("RunActivity:executeTool");
  expect(tag(tool, "gen_ai.tool.name")).toBe("ls");
  expect(tag(tool, "keel.tool.replay_class")).toBe("safe");
  expect(tag(tool, "keel.tool.outcome")).toBe("executed");

  // The trace viewer of `keel dev --traces` shows it: the session's list links it, its page is
  // the waterfall, served with a policy that runs no script.
  const viewer = await startTraceViewer({ jaegerUrl: jaeger.uiUrl });
  try {
    const list = await fetch(`${viewer.url}/?session=${sessionId}`);
    expect(await list.text()).toContain(`href="/trace/${trace.traceID}"`);
    const waterfall = await fetch(`${viewer.url}/trace/${trace.traceID}`);
    expect(waterfall.status).toBe(200);
    expect(waterfall.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await waterfall.text();
    for (const name of ["POST /v1/sessions/:sessionId/messages", "RunWorkflow:agentRun", "execute_tool ls"])
      expect(html).toContain(name);
    expect((await fetch(`${viewer.url}/trace/not-a-trace`)).status).toBe(400);
  } finally {
    await viewer.close();
  }

  // Metrics reached the receiver: tokens by tenant and model, tool latency, queue waits, outcomes.
  // Each process exports on its own interval (the tool's duration comes from the worker that took
  // over): wait for every series, then say which one is missing.
  const expected = [
    new RegExp(`keel_model_tokens[^\\n]*keel_tenant_id="${api.tenants.a}"`),
    /keel_tool_duration[^\n]*gen_ai_tool_name="ls"/,
    /keel_activity_schedule_to_start/,
    /keel_runs[^\n]*keel_run_outcome="completed"/,
    // The Temporal SDK's own metrics from the workers' Runtime: queue waits of workflow and activity tasks.
    /temporal_workflow_task_schedule_to_start_latency[^\n]*task_queue="/,
    /temporal_activity_schedule_to_start_latency[^\n]*task_queue="/,
  ];
  let metrics = "";
  await eventually(
    async () => {
      metrics = await (await fetch(jaeger.metricsUrl)).text();
      return expected.every((pattern) => pattern.test(metrics)) ? true : undefined;
    },
    30_000,
    "the run's metrics",
  ).catch(() => undefined);
  for (const pattern of expected) expect(metrics).toMatch(pattern);
  await second.stop();
});

test("the committed histories replay on the traced workflow bundle (turning tracing on breaks no run in flight), sinks registered", async () => {
  const dir = resolve(__dirname, "../../fixtures/histories");
  const files = readdirSync(dir).filter((file) => file.endsWith(".json"));
  expect(files.length).toBeGreaterThan(0);
  // The replaying workflow calls the span exporter and outcome sinks: the replay worker has them,
  // as no-ops, so nothing is logged about sinks it lacks.
  const errors = jest.spyOn(Runtime.instance().logger, "error");
  try {
    for (const file of files) {
      const history = historyFromJSON(JSON.parse(readFileSync(join(dir, file), "utf8")));
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: bundlePath }, sinks: replayTelemetrySinks() },
        history,
        file,
      );
    }
    expect(errors.mock.calls.map(([message]) => message)).toEqual([]);
  } finally {
    errors.mockRestore();
  }
});
