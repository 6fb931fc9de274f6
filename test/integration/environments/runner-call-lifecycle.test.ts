/**
 * A runner's call follows the same tool-call lifecycle as a worker's (src/tool-calls/lifecycle.ts),
 * through the real API, Temporal, S3 and `keel runner` processes: a result already stored is
 * adopted at any attempt of a call that is not safe (a moved call is scheduled anew at attempt 1);
 * an unsafe call whose claim was lost after its start marker is not run a second time; and the
 * call's time counts in its tenant's usage, with the `execute_tool` span and `keel.tool.duration`
 * metric a worker's call makes (adoptions and refusals included). Telemetry is on in this process,
 * which serves the API.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { defaultPayloadConverter, type Payload } from "@temporalio/common";
import type { RunnerToolInput } from "../../../src/contracts/activities";
import { runWorkflowId } from "../../../src/contracts/runs";
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import { createMessageEntry } from "../../../src/core/session-entries";
import { enableInstrumentation } from "../../../src/telemetry/instrumentation";
import { dayOf, TenantUsage, WORKER_TOOL_SECONDS_WAIT_MS } from "../../../src/tenants/usage";
import { s3Client, s3Settings } from "../../support/integration-env";
import { eventually, expectIntactSession, messagesOf } from "../../support/run-harness";
import { CAPTURED_TELEMETRY, captureTelemetry } from "../../support/telemetry-capture";
import { type ApiStage, expectProblem } from "../api/api-stage";
import { claims, type RunnerStage, useRunnerStage, workspaceRoot } from "./runner-stage";

let stage: RunnerStage;
let api: ApiStage;

useRunnerStage((created) => {
  stage = created;
  api = created.api;
});

// A runner process to start and, in one test, a heartbeat timeout (4 s) to wait out.
jest.setTimeout(120_000);

/** A run on `environment` whose one call is `bash` with `command`. */
async function bashOn(environment: string, scenario: string, command: string) {
  api.stage.llm.addScenario(scenario, {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command } }] }],
    after: { text: "done" },
  });
  const ref = api.stage.newSession();
  await api.stage.runs.deliver(
    ref,
    { text: `[scenario:${scenario}] go`, mode: "auto" },
    api.stage.settings({ environment }),
  );
  return ref;
}

/** The input of the run's first call scheduled for a runner (its result slot, its call id). */
function scheduledRunnerCall(ref: { tenantId: string; sessionId: string }): Promise<RunnerToolInput> {
  return eventually(async () => {
    const history = await api.stage.client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
    const scheduled = (history.events ?? []).find(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === "executeToolOnRunner",
    );
    const payload = scheduled?.activityTaskScheduledEventAttributes?.input?.payloads?.[0];
    return payload ? defaultPayloadConverter.fromPayload<RunnerToolInput>(payload as Payload) : undefined;
  });
}

/** The tool seconds in the tenant's usage today, as the usage route reads them. */
async function tenantToolSeconds(tenantId: string): Promise<number> {
  const s3 = s3Client();
  try {
    const { bucket, prefix } = s3Settings();
    return (await new TenantUsage(s3, bucket, prefix).day(tenantId, dayOf(Date.now()))).toolSeconds;
  } finally {
    s3.destroy();
  }
}

function toolTexts(entries: Awaited<ReturnType<typeof api.stage.entries>>): string[] {
  return messagesOf(entries).flatMap((message) =>
    message.role === "toolResult"
      ? [message.content.map((block) => (block.type === "text" ? block.text : "")).join("")]
      : [],
  );
}

// This process is the API (the stage's app): its spans and metrics are read here.
const telemetry = captureTelemetry();
beforeAll(() => {
  telemetry.install();
  enableInstrumentation(CAPTURED_TELEMETRY);
});
afterAll(async () => {
  enableInstrumentation(undefined);
  await telemetry.uninstall();
});

/** The `execute_tool` spans the API made for the session's calls. */
const toolSpansOf = (sessionId: string) =>
  telemetry.spans.getFinishedSpans().filter((span) => span.attributes["keel.session_id"] === sessionId);

test("a runner call scheduled anew at attempt 1 whose result is already stored is adopted, not run again", async () => {
  const env = await stage.newEnvironment();
  const root = workspaceRoot();
  const ref = await bashOn(env.name, "moved-stored", "echo ran >> runs.txt");
  // As when the call was moved: an earlier activity for the same call stored its result, and the
  // call waits on the queue at attempt 1 again.
  const input = await scheduledRunnerCall(ref);
  await api.stage.store.putEntry(
    ref,
    input.slot.seq,
    createMessageEntry(input.slot, {
      role: "toolResult",
      toolCallId: input.toolCallId,
      toolName: input.toolName,
      content: [{ type: "text", text: "stored by the earlier activity" }],
      isError: false,
      timestamp: Date.now(),
    }),
  );
  const runner = stage.startRunner(env.name, env.token, ["--workspace-root", root]);
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(toolTexts(await expectIntactSession(api.stage, ref))).toEqual(["stored by the earlier activity"]);
  expect(existsSync(join(root, ref.sessionId, "runs.txt"))).toBe(false);
  expect(claims(runner)).toEqual([]);
  // Traced as a worker's adoption is.
  expect(toolSpansOf(ref.sessionId).map((span) => span.attributes)).toEqual([
    expect.objectContaining({ "gen_ai.tool.name": "bash", "keel.tool.outcome": "adopted" }),
  ]);
});

test("bash whose claim is lost after its start marker: the next attempt gets the unknown outcome, not a second run", async () => {
  const env = await stage.newEnvironment();
  const root = workspaceRoot();
  const ref = await bashOn(env.name, "lost-after-marker", "echo ran >> runs.txt");
  // A claim that marks the call started and is then lost: no heartbeat, no result.
  const lost = await eventually(async () => {
    const answer = await api.call("POST", `/v1/environments/${env.name}/calls:claim`, {
      key: env.token,
      json: { waitSeconds: 1, runs: ["mcp"] },
    });
    return answer.status === 200 ? answer.body : undefined;
  });
  expect({ tool: lost.toolCall.name, attempt: lost.attempt }).toEqual({ tool: "bash", attempt: 1 });
  const runner = stage.startRunner(env.name, env.token, ["--workspace-root", root]);
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(toolTexts(await expectIntactSession(api.stage, ref))).toEqual([UNKNOWN_OUTCOME_TEXT]);
  expect(existsSync(join(root, ref.sessionId, "runs.txt"))).toBe(false);
  expect(claims(runner)).toEqual([]);
  // The lost claim's late result is used by nothing.
  expectProblem(
    await api.call("POST", `/v1/environments/${env.name}/calls/${lost.callId}/result`, {
      key: env.token,
      json: { claimId: lost.claimId, output: { content: [{ type: "text", text: "late" }], isError: false } },
    }),
    404,
    "call-not-found",
  );
  // Traced as a worker's refusal is: the attempt that answered, its outcome.
  expect(toolSpansOf(ref.sessionId).map((span) => span.attributes)).toEqual([
    expect.objectContaining({
      "keel.tool.outcome": "unknown_outcome",
      "keel.tool.is_error": true,
      "temporal.activity.attempt": 2,
    }),
  ]);
});

test("a runner call counts its tool time in the tenant's usage and makes an execute_tool span and metric", async () => {
  const env = await stage.newEnvironment();
  stage.startRunner(env.name, env.token, ["--workspace-root", workspaceRoot()]);
  // Tool seconds of the worker's calls in earlier tests may still be waiting to ride with a write.
  await new Promise((settled) => setTimeout(settled, WORKER_TOOL_SECONDS_WAIT_MS + 500));
  const toolSeconds = await tenantToolSeconds(api.tenants.a);
  const ref = await bashOn(env.name, "runner-usage", "sleep 1; echo timed");
  expect((await api.stage.result(ref)).status).toBe("completed");
  const input = await scheduledRunnerCall(ref);
  expect(toolTexts(await api.stage.entries(ref))).toEqual(["timed"]);

  // Usage: the call's duration counted once (at least the command's, less than twice it).
  const counted = (await tenantToolSeconds(ref.tenantId)) - toolSeconds;
  expect(counted).toBeGreaterThanOrEqual(1);
  expect(counted).toBeLessThan(2);

  // The span, as a worker's call makes it, and where the call ran.
  const [span, ...more] = toolSpansOf(ref.sessionId);
  expect(more).toEqual([]);
  expect(span?.name).toBe("execute_tool bash");
  expect(span?.attributes).toMatchObject({
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "bash",
    "gen_ai.tool.call.id": input.toolCallId,
    "keel.tool.replay_class": "unsafe",
    "keel.tool.outcome": "executed",
    "keel.tool.is_error": false,
    "keel.tenant_id": ref.tenantId,
    "keel.environment": env.name,
  });
  const [seconds = 0, nanos = 0] = span?.duration ?? [];
  expect(seconds + nanos / 1e9).toBeGreaterThanOrEqual(1);

  expect(await telemetry.toolDurations()).toContainEqual({
    "gen_ai.tool.name": "bash",
    "keel.tool.outcome": "executed",
    "keel.tool.replay_class": "unsafe",
  });
});
