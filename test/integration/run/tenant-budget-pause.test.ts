/**
 * A tenant's budget pauses its runs: once the tenant's recorded usage reaches its daily token
 * quota, a run stops at its next turn boundary in the durable state `paused` (reason
 * `tenantBudget`), a resume alone does not lift it while the tenant is still over, and it goes on
 * once the operator raises the quota — found by the paused run's periodic check, also on a
 * worker that replaced the one it paused on, or at once on a resume. A pause that times out ends
 * the run. Every session is whole and closed afterwards.
 */

import { type RunState, runWorkflowId, type SessionRef } from "../../../src/contracts/runs";
import type { AgentEvent } from "../../../src/core/events";
import { TenantStore } from "../../../src/tenants/store";
import { RunStatusAttribute } from "../../../src/workflows/search-attributes";
import { s3Client, s3Settings } from "../../support/integration-env";
import { eventually, expectIntactSession, messagesOf, runStageForSuite } from "../../support/run-harness";

// Each test starts its workers (one kills one): the stage starts none.
const stage = runStageForSuite({ workersPerTest: true });
const s3 = s3Client();
afterAll(() => s3.destroy());

/** Each test's tenant: its own id, so its usage and quotas are its own. */
let tenantId: string;
let tenants: TenantStore;
beforeEach(() => {
  tenantId = `budget-${Math.random().toString(36).slice(2, 10)}`;
  const { bucket, prefix } = s3Settings();
  tenants = new TenantStore(s3, bucket, prefix);
});

/** The tenant may use `tokensPerDay` tokens a day: 1 is used up by the first model call. */
function setDailyTokens(tokensPerDay: number): Promise<void> {
  return tenants.putSettings(tenantId, { quotas: { tokensPerDay } });
}

/** Two turns of tool calls, then an answer: the budget is reached with work left to do. */
function toolsThenAnswer(name: string): void {
  stage().llm.addScenario(name, {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }, { toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "all listed" },
  });
}

async function pausedState(ref: SessionRef): Promise<RunState> {
  return eventually(
    async () => {
      const current = await stage().runs.state(ref);
      return current?.status === "paused" ? current : undefined;
    },
    30_000,
    "the run paused",
  );
}

async function startPaused(scenario: string, pauseTimeoutSeconds?: number) {
  toolsThenAnswer(scenario);
  const ref: SessionRef = { tenantId, sessionId: stage().newSession().sessionId };
  const settings = stage().settings();
  await stage().runs.deliver(
    ref,
    { text: `[scenario:${scenario}] list`, mode: "auto" },
    pauseTimeoutSeconds === undefined
      ? settings
      : { ...settings, limits: { ...settings.limits, pauseTimeoutSeconds } },
  );
  return { ref, state: await pausedState(ref) };
}

const modelCalls = (scenario: string) =>
  stage()
    .llm.journal()
    .filter((entry) => entry.scenario === scenario).length;

const events = (ref: SessionRef): Promise<AgentEvent[]> => stage().runs.events(ref, 0);

test("paused at the tenant's daily token budget; a resume while still over keeps it paused; a raise and a resume let it finish", async () => {
  await setDailyTokens(1);
  const worker = await stage().startWorker();
  const { ref, state } = await startPaused("tenant-raise");
  expect(state.pause?.reason).toMatchObject({ type: "tenantBudget", budget: "tokensPerDay" });
  expect(state.pause?.message).toMatch(
    /^the tenant's daily token budget is used up \(tokensPerDay 1 tokens; used \d+\)/,
  );
  // The turn that reached the budget is whole: its tool call answered, nothing in flight.
  expect(state.pendingToolCalls.every((call) => call.state === "completed")).toBe(true);
  expect(modelCalls("tenant-raise")).toBe(1);
  const handle = stage().client.workflow.getHandle(runWorkflowId(ref));
  expect((await handle.describe()).typedSearchAttributes.get(RunStatusAttribute)).toBe("paused");
  expect((await events(ref)).find((event) => event.type === "run_paused")).toMatchObject({
    reason: { type: "tenantBudget", budget: "tokensPerDay" },
  });

  // A tenant's budget is not the run's to lift: the resume asks afresh and the run stays paused.
  const refused = await stage().runs.setBudget(ref, { resume: true }, { answerWaitMs: 20_000 });
  expect(refused).toMatchObject({
    kind: "answered",
    state: { status: "paused", pause: { reason: { type: "tenantBudget" } } },
  });
  expect(modelCalls("tenant-raise")).toBe(1);

  await setDailyTokens(1_000_000);
  const resumed = await stage().runs.setBudget(ref, { resume: true }, { answerWaitMs: 20_000 });
  expect(resumed).toMatchObject({ kind: "answered" });
  if (resumed.kind === "answered") expect(resumed.state.status).not.toBe("paused");
  expect(await stage().result(ref)).toMatchObject({ status: "completed", reason: "the agent finished" });
  expect(modelCalls("tenant-raise")).toBe(3);
  const entries = await expectIntactSession(stage(), ref);
  expect(messagesOf(entries).map((message) => message.role)).toEqual([
    "user",
    "assistant",
    "toolResult",
    "assistant",
    "toolResult",
    "assistant",
  ]);
  const types = (await events(ref)).map((event) => event.type);
  expect(types.indexOf("run_resumed")).toBeGreaterThan(types.indexOf("run_paused"));
  await worker.stop();
});

test("the worker dies while the run is paused at its tenant's budget; after a raise, the new worker's periodic check lets it go on", async () => {
  await setDailyTokens(1);
  const first = await stage().startWorker({ KEEL_TENANT_BUDGET_RECHECK_SECONDS: "1" });
  const { ref } = await startPaused("tenant-crash");
  await first.kill();
  const second = await stage().startWorker({ KEEL_TENANT_BUDGET_RECHECK_SECONDS: "1" });
  // Still over: the checks keep it paused.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  expect((await stage().runs.state(ref))?.status).toBe("paused");
  expect(modelCalls("tenant-crash")).toBe(1);
  // Raised, with no resume: the next check finds the tenant under budget.
  await setDailyTokens(1_000_000);
  expect(await stage().result(ref)).toMatchObject({ status: "completed", reason: "the agent finished" });
  expect(modelCalls("tenant-crash")).toBe(3);
  await expectIntactSession(stage(), ref);
  await second.stop();
});

test("a pause at the tenant's budget that times out ends the run, saying why; no model call after it", async () => {
  await setDailyTokens(1);
  const worker = await stage().startWorker({ KEEL_TENANT_BUDGET_RECHECK_SECONDS: "1" });
  const { ref } = await startPaused("tenant-timeout", 3);
  const result = await stage().result(ref);
  expect(result.status).toBe("completed");
  expect(result.reason).toMatch(
    /^the tenant's daily token budget is used up .*paused for 3 s without a raise or a resume$/,
  );
  expect(modelCalls("tenant-timeout")).toBe(1);
  const entries = await expectIntactSession(stage(), ref);
  expect(messagesOf(entries).map((message) => message.role)).toEqual(["user", "assistant", "toolResult"]);
  await worker.stop();
});

test("a tenant without token or cost quotas is never paused by them", async () => {
  await tenants.putSettings(tenantId, { quotas: { concurrentRuns: 5 } });
  const worker = await stage().startWorker();
  toolsThenAnswer("tenant-unlimited");
  const ref: SessionRef = { tenantId, sessionId: stage().newSession().sessionId };
  await stage().runs.deliver(
    ref,
    { text: "[scenario:tenant-unlimited] list", mode: "auto" },
    stage().settings(),
  );
  expect(await stage().result(ref)).toMatchObject({ status: "completed", reason: "the agent finished" });
  expect((await events(ref)).some((event) => event.type === "run_paused")).toBe(false);
  await expectIntactSession(stage(), ref);
  await worker.stop();
});
