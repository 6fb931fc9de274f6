/**
 * Budgets that pause: a run that reaches its cost budget stops at the next turn boundary in the
 * durable state `paused` (its state, events, `KeelStatus` and current details say so) and goes on
 * when its budget is raised or it is resumed — also on a worker that replaced the one it paused on
 * — ends when its pause times out, and ends as aborted when aborted while paused. Every session is
 * whole and closed afterwards.
 */
import { workflowMetadataQuery } from "@temporalio/workflow";
import { type RunSettings, type RunState, runWorkflowId, type SessionRef } from "../../../src/contracts/runs";
import type { AgentEvent } from "../../../src/core/events";
import { RunStatusAttribute } from "../../../src/workflows/search-attributes";
import { eventually, expectIntactSession, messagesOf, runStageForSuite } from "../../support/run-harness";

// Each test starts its workers (one test kills one): the stage starts none.
const stage = runStageForSuite({ workersPerTest: true });

/** A budget the first model call (a few hundred tokens at $1 per million) already reaches. */
const TINY_BUDGET = 0.000_001;

/** Two turns of tool calls, then an answer: the budget is reached with work left to do. */
function toolsThenAnswer(name: string): void {
  stage().llm.addScenario(name, {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }, { toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "all listed" },
  });
}

function budgeted(limits: Partial<RunSettings["limits"]> = {}): RunSettings {
  const settings = stage().settings();
  return { ...settings, limits: { ...settings.limits, maxCostUsd: TINY_BUDGET, ...limits } };
}

async function startPaused(
  scenario: string,
  settings = budgeted(),
): Promise<{ ref: SessionRef; state: RunState }> {
  toolsThenAnswer(scenario);
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: `[scenario:${scenario}] list`, mode: "auto" }, settings);
  const state = await eventually(
    async () => {
      const current = await stage().runs.state(ref);
      return current?.status === "paused" ? current : undefined;
    },
    30_000,
    "the run paused",
  );
  return { ref, state };
}

function modelCalls(scenario: string): number {
  return stage()
    .llm.journal()
    .filter((entry) => entry.scenario === scenario).length;
}

async function events(ref: SessionRef): Promise<AgentEvent[]> {
  return stage().runs.events(ref, 0);
}

test("paused at its cost budget after a turn, shown everywhere; a raise lets it finish", async () => {
  const worker = await stage().startWorker();
  const { ref, state } = await startPaused("pause-raise");
  expect(state.pause?.reason).toMatchObject({ type: "runBudget", budget: "cost", limit: TINY_BUDGET });
  expect(state.pause?.message).toMatch(/^cost budget reached/);
  expect(state.budget).toEqual({ maxCostUsd: TINY_BUDGET, maxTokens: 0 });
  // The turn that reached the budget is whole: its tool call answered, nothing in flight.
  expect(state.pendingToolCalls.every((call) => call.state === "completed")).toBe(true);
  expect(modelCalls("pause-raise")).toBe(1);
  const handle = stage().client.workflow.getHandle(runWorkflowId(ref));
  const description = await handle.describe();
  expect(description.typedSearchAttributes.get(RunStatusAttribute)).toBe("paused");
  expect((await handle.query(workflowMetadataQuery)).currentDetails).toMatch(
    /^\*\*paused\*\* \(cost budget reached/,
  );
  const pausedEvent = (await events(ref)).find((event) => event.type === "run_paused");
  expect(pausedEvent).toMatchObject({ reason: { type: "runBudget", budget: "cost" } });

  const raised = await stage().runs.setBudget(ref, { maxCostUsd: 10 });
  expect(raised).toMatchObject({ kind: "answered", state: { budget: { maxCostUsd: 10 } } });
  const result = await stage().result(ref);
  expect(result).toMatchObject({ status: "completed", reason: "the agent finished" });
  expect(modelCalls("pause-raise")).toBe(3);
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
  expect((await handle.describe()).typedSearchAttributes.get(RunStatusAttribute)).toBe("completed");
  await worker.stop();
});

test("a pause that times out ends the run, saying why; no model call is made after the pause", async () => {
  const worker = await stage().startWorker();
  const { ref } = await startPaused("pause-timeout", budgeted({ pauseTimeoutSeconds: 2 }));
  const result = await stage().result(ref);
  expect(result.status).toBe("completed");
  expect(result.reason).toMatch(/^cost budget reached .*paused for 2 s without a raise or a resume$/);
  expect(modelCalls("pause-timeout")).toBe(1);
  const entries = await expectIntactSession(stage(), ref);
  expect(messagesOf(entries).map((message) => message.role)).toEqual(["user", "assistant", "toolResult"]);
  await worker.stop();
});

test("the worker dies while the run is paused: a new worker resumes it", async () => {
  const first = await stage().startWorker();
  const { ref } = await startPaused("pause-crash");
  await first.kill();
  const second = await stage().startWorker();
  const resumed = await stage().runs.setBudget(ref, { resume: true }, { answerWaitMs: 30_000 });
  // A resume removes the budget the run reached.
  expect(resumed).toMatchObject({ kind: "answered", state: { budget: { maxCostUsd: 0 } } });
  expect(await stage().result(ref)).toMatchObject({ status: "completed" });
  expect(modelCalls("pause-crash")).toBe(3);
  await expectIntactSession(stage(), ref);
  await second.stop();
});

test("aborted while paused: it ends as aborted, the session closed", async () => {
  const worker = await stage().startWorker();
  const { ref } = await startPaused("pause-abort");
  expect(await stage().runs.abort(ref, { reason: "too expensive" })).toMatchObject({
    kind: "answered",
    reason: "too expensive",
  });
  expect(await stage().result(ref)).toMatchObject({ status: "aborted", reason: "too expensive" });
  expect(modelCalls("pause-abort")).toBe(1);
  await expectIntactSession(stage(), ref);
  await worker.stop();
});
