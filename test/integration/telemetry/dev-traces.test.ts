/**
 * `keel dev --traces`: Jaeger starts with the stack, its address is printed beside the Temporal
 * UI's, the demo run's trace (API request, workflow, model and tool calls) is at the printed
 * `traces` link, its metrics on the printed page, and Ctrl-C stops Jaeger with the rest.
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DEMO_DONE_LINE } from "../../../src/cli/demo";
import { ensureJaeger, JAEGER_BUILD_TIMEOUT_MS } from "../../../src/cli/devstack/jaeger-server";
import { testTmpDir } from "../../support/integration-env";
import { holdKeelDevLock, KEEL_DEV_LOCK_WAIT_MS } from "../../support/keel-dev-lock";
import { eventually } from "../../support/run-harness";
import { type KeelDev, printed, processesMentioning, startKeelDev } from "../cli/keel-process";

const STACK_START_TIMEOUT_MS = 150_000;
jest.setTimeout(STACK_START_TIMEOUT_MS + 60_000);

let dataDir: string;
let dev: KeelDev;

// Jaeger is built the first time a tracing test needs it (`npm run ensure` leaves it out).
beforeAll(() => ensureJaeger(process.env), JAEGER_BUILD_TIMEOUT_MS);

let releaseStackLock: (() => void) | undefined;
beforeAll(async () => {
  releaseStackLock = await holdKeelDevLock();
}, KEEL_DEV_LOCK_WAIT_MS);

beforeAll(() => {
  dataDir = mkdtempSync(join(testTmpDir(), "keel-dev-traces-"));
  dev = startKeelDev(dataDir, ["--traces"]);
});

afterAll(async () => {
  try {
    await dev?.stop("SIGKILL");
  } finally {
    releaseStackLock?.();
  }
});

test("keel dev --traces prints Jaeger beside the Temporal UI and the demo run's trace is there", async () => {
  const output = await dev.waitFor(DEMO_DONE_LINE, STACK_START_TIMEOUT_MS);
  expect(output).toMatch(/Jaeger \(traces and metrics\) … ok/);
  const lines = output.split("\n");
  const temporalUi = lines.findIndex((line) => line.trimStart().startsWith("Temporal UI"));
  const tracesLine = lines[temporalUi + 1] ?? "";
  const viewer =
    /^\s+Traces\s+(http:\/\/127\.0\.0\.1:\d+) \(.*Jaeger's query API: (http:\/\/127\.0\.0\.1:\d+)\//.exec(
      tracesLine,
    );
  expect(viewer).not.toBeNull();
  const [, viewerUrl, jaegerUrl] = viewer as RegExpExecArray;
  const metricsUrl = printed(output, "Metrics") as string;
  const tracesLink = printed(output, "traces") as string;
  const sessionId = /\?session=([^&\s]+)/.exec(tracesLink)?.[1] as string;
  expect(tracesLink).toBe(`${viewerUrl}/?session=${sessionId}`);

  // The demo's trace in Jaeger itself (the worker's spans carry the session's tag)...
  const sessionTag = encodeURIComponent(JSON.stringify({ "keel.session_id": decodeURIComponent(sessionId) }));
  const operations = await eventually(
    async () => {
      const response = await fetch(`${jaegerUrl}/api/traces?service=keel-worker&tags=${sessionTag}`);
      const traces = ((await response.json()) as { data: { spans: { operationName: string }[] }[] }).data;
      const names = new Set(traces.flatMap((trace) => trace.spans.map((span) => span.operationName)));
      return names.has("RunWorkflow:agentRun") && names.has("execute_tool edit") ? names : undefined;
    },
    30_000,
    "the demo's trace in Jaeger",
  );
  expect([...operations]).toEqual(
    expect.arrayContaining(["POST /v1/sessions/:sessionId/messages", "chat local-chat", "execute_tool ls"]),
  );
  // ...and on the printed page, which lists it.
  const page = await (await fetch(tracesLink)).text();
  expect(page).toContain(`Traces of session ${decodeURIComponent(sessionId)}`);
  expect(page).toMatch(/href="\/trace\/[0-9a-f]+"/);
  const metrics = await eventually(
    async () => {
      const text = await (await fetch(metricsUrl)).text();
      return text.includes("keel_model_tokens") ? text : undefined;
    },
    30_000,
    "the demo's metrics",
  );
  expect(metrics).toMatch(/keel_model_tokens[^\n]*keel_tenant_id="dev"/);

  // Ctrl-C stops Jaeger with the rest of the stack.
  expect(processesMentioning(join(dataDir, "jaeger")).length).toBeGreaterThan(0);
  expect(await dev.stop("SIGINT")).toBe(0);
  const deadline = Date.now() + 10_000;
  while (processesMentioning(dataDir).length > 0 && Date.now() < deadline) await sleep(200);
  expect(processesMentioning(dataDir)).toEqual([]);
});
