/**
 * Failover of a run's model calls through the real SDKs against the local LLM server: a model
 * answering 429 or 529 hands the turn to the next model of the run's list, its provider's circuit
 * breaker keeps later calls away from it until it recovered, an abort during a failover ends the
 * run with its session intact, and a run whose every model fails names each model's error.
 *
 * A is `local-anthropic` (Anthropic's Messages API) and B `local-chat` (OpenAI's Chat
 * Completions): two provider endpoints, two breakers, and the conversation crosses vendors; one
 * test falls back to a second model on A's own endpoint (breakers are kept per model).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { AgentEvent } from "../../../src/core/events";
import type { SessionEntry } from "../../../src/core/session-types";
import { eventually, expectIntactSession, messagesOf, runStageForSuite } from "../../support/run-harness";

jest.setTimeout(90_000);

const A = "local-anthropic";
const B = "local-chat";
const COOLDOWN_MS = 3_000;

const stage = runStageForSuite({
  workerEnv: {
    KEEL_PROVIDER_BREAKER_FAILURES: "2",
    KEEL_PROVIDER_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS),
  },
});

/**
 * Closes both breakers: a run with one model always sends its call (the breaker only learns from
 * it), and an answer closes its model's breaker. Every test starts from closed breakers.
 */
async function closeBreakers(): Promise<void> {
  for (const model of [A, B]) {
    const ref = stage().newSession();
    await stage().runs.deliver(
      ref,
      { text: "[scenario:fo-heal] hi", mode: "auto" },
      stage().settings({ model }),
    );
    expect((await stage().result(ref)).status).toBe("completed");
  }
}

beforeAll(() => {
  stage().llm.addScenario("fo-heal", { turns: [], after: { text: "fine" } });
});

afterEach(async () => {
  stage().llm.clearFaults();
  await closeBreakers();
});

/** The local server's requests for `model` in `scenario`. */
function requests(model: string, scenario: string) {
  return stage()
    .llm.journal()
    .filter((entry) => entry.model === model && entry.scenario === scenario);
}

/**
 * `model_change` entries and assistant messages of a session, as (kind, model) in order, on every
 * branch: a call the turn failed over from is closed (`keel`) beside the next model's entries.
 */
function modelTrail(entries: SessionEntry[]): string[] {
  return entries.flatMap((entry) => {
    if (entry.type === "model_change") return [`change ${entry.provider}/${entry.modelId}`];
    if (entry.type === "message" && entry.message.role === "assistant")
      return [`answer ${entry.message.provider}/${entry.message.model}`];
    return [];
  });
}

async function fallbacks(ref: { tenantId: string; sessionId: string }) {
  return (await stage().runs.events(ref, 0)).filter(
    (event): event is Extract<AgentEvent, { type: "model_fallback" }> => event.type === "model_fallback",
  );
}

const listSettings = () => stage().settings({ model: A, fallbackModels: [B] });

test.each([
  ["rate_limit", "rate_limit", 429],
  ["overloaded", "overloaded", 529],
] as const)(
  "A answering %s: the turn goes to B, and the session and the events say so",
  async (kind, reason, status) => {
    const scenario = `fo-${kind}`;
    stage().llm.addScenario(scenario, { turns: [], after: { text: "You said: {{lastUser}}" } });
    stage().llm.addFaults([{ kind, match: { model: A, scenario }, rate: 1, retryAfterSeconds: 1 }]);
    const ref = stage().newSession();
    await stage().runs.deliver(ref, { text: `[scenario:${scenario}] hello`, mode: "auto" }, listSettings());
    expect((await stage().result(ref)).status).toBe("completed");

    // A was asked until its breaker opened (2 failures), B once.
    expect(requests(A, scenario).map((entry) => entry.status)).toEqual([status, status]);
    expect(requests(B, scenario).map((entry) => entry.status)).toEqual([200]);
    const entries = await expectIntactSession(stage(), ref);
    expect(modelTrail(entries)).toEqual([`answer keel/${A}`, `change local/${B}`, `answer local/${B}`]);
    // A's call is closed at its own slot; B's entries took fresh slots on a branch beside it.
    const [failedA, changeToB] = entries.filter(
      (entry) => entry.type !== "message" || entry.message.role === "assistant",
    );
    expect(failedA).toMatchObject({
      message: { stopReason: "error", errorMessage: expect.stringContaining(`failed over (${reason})`) },
    });
    expect(changeToB?.parentId).toBe(failedA?.parentId);
    const last = messagesOf(entries).at(-1);
    expect(last?.role === "assistant" && last.content).toEqual([{ type: "text", text: "You said: hello" }]);
    const [event, ...more] = await fallbacks(ref);
    expect(more).toEqual([]);
    expect(event).toMatchObject({ from: A, to: B, reason });
    expect(event?.error).toContain(`${A}: ${status}`);
  },
);

test("a second model on A's endpoint is asked once A is rate limited: each model has its own breaker", async () => {
  // A one-line model without a base URL: the configured Anthropic URL, A's own endpoint.
  const sibling = "fo-sibling";
  const scenario = "fo-same-endpoint";
  stage().llm.addScenario(scenario, { turns: [], after: { text: "You said: {{lastUser}}" } });
  stage().llm.addFaults([
    { kind: "rate_limit", match: { model: A, scenario }, rate: 1, retryAfterSeconds: 1 },
  ]);
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: `[scenario:${scenario}] hello`, mode: "auto" },
    stage().settings({ model: A, fallbackModels: [`anthropic-compatible:${sibling}`] }),
  );
  expect((await stage().result(ref)).status).toBe("completed");

  expect(requests(A, scenario).map((entry) => entry.status)).toEqual([429, 429]);
  expect(requests(sibling, scenario).map((entry) => entry.status)).toEqual([200]);
  const entries = await expectIntactSession(stage(), ref);
  expect(modelTrail(entries)).toEqual([
    `answer keel/${A}`,
    `change anthropic-compatible/${sibling}`,
    `answer anthropic-compatible/${sibling}`,
  ]);
  expect((await fallbacks(ref)).map(({ from, to, reason }) => ({ from, to, reason }))).toEqual([
    { from: A, to: `anthropic-compatible:${sibling}`, reason: "rate_limit" },
  ]);
});

test("an open breaker keeps the next run's call away from A; after the cooldown the run is back on A", async () => {
  stage().llm.addScenario("fo-open", { turns: [], after: { text: "on {{turn}}" } });
  stage().llm.addScenario("fo-back", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: `sleep ${(COOLDOWN_MS + 500) / 1000}` } }] }],
    after: { text: "done" },
  });
  stage().llm.addFaults([
    { kind: "overloaded", match: { model: A, scenario: "fo-open" }, rate: 1 },
    { kind: "overloaded", match: { model: A, scenario: "fo-back" }, rate: 1 },
  ]);

  // A run opens A's breaker and goes on with B.
  const first = stage().newSession();
  await stage().runs.deliver(first, { text: "[scenario:fo-open] go", mode: "auto" }, listSettings());
  expect((await stage().result(first)).status).toBe("completed");
  expect(requests(A, "fo-open")).toHaveLength(2);

  // The next run's first call does not reach A at all; B answers with a tool call that outlasts the
  // cooldown, and A is healthy again by then.
  const second = stage().newSession();
  await stage().runs.deliver(second, { text: "[scenario:fo-back] go", mode: "auto" }, listSettings());
  await eventually(async () => (requests(B, "fo-back").length > 0 ? true : undefined));
  expect(requests(A, "fo-back")).toEqual([]);
  stage().llm.clearFaults();
  expect((await stage().result(second)).status).toBe("completed");

  // The turn after the cooldown probed A (one request) and stayed there.
  expect(requests(B, "fo-back").map((entry) => entry.turn)).toEqual([0]);
  expect(requests(A, "fo-back").map((entry) => [entry.turn, entry.status])).toEqual([[1, 200]]);
  const entries = await expectIntactSession(stage(), second);
  expect(modelTrail(entries)).toEqual([
    `answer keel/${A}`,
    `change local/${B}`,
    `answer local/${B}`,
    `change local/${A}`,
    `answer local/${A}`,
  ]);
  expect((await fallbacks(second)).map(({ from, to, reason }) => ({ from, to, reason }))).toEqual([
    { from: A, to: B, reason: "circuit_open" },
    { from: B, to: A, reason: "recovered" },
  ]);
});

test("an abort during a failover ends the run aborted, its session intact, no call made twice", async () => {
  stage().llm.addScenario("fo-abort-wait", { turns: [], after: { text: "never" } });
  stage().llm.addScenario("fo-abort-b", { turns: [], after: { text: "never" } });
  stage().llm.addFaults([
    { kind: "rate_limit", match: { model: A, scenario: "fo-abort-wait" }, rate: 1, retryAfterSeconds: 1 },
    { kind: "rate_limit", match: { model: A, scenario: "fo-abort-b" }, rate: 1, retryAfterSeconds: 1 },
    { kind: "hang", match: { model: B, scenario: "fo-abort-b" }, rate: 1 },
  ]);

  // Aborted while A's failed call waits for its retry, before the turn went on to B: B is never asked.
  const onA = stage().newSession();
  await stage().runs.deliver(onA, { text: "[scenario:fo-abort-wait] go", mode: "auto" }, listSettings());
  await eventually(async () =>
    requests(A, "fo-abort-wait").some((entry) => entry.status === 429) ? true : undefined,
  );
  expect(await stage().runs.signalAbort(onA, "stop while retrying")).toBe("sent");
  expect(await stage().result(onA)).toMatchObject({ status: "aborted", reason: "stop while retrying" });
  const onAEntries = await expectIntactSession(stage(), onA);
  expect(modelTrail(onAEntries)).toEqual([`answer keel/${A}`]);
  expect(messagesOf(onAEntries).at(-1)).toMatchObject({ role: "assistant", stopReason: "aborted" });
  await closeBreakers();

  // Aborted while B, the model the turn failed over to, is being asked.
  const onB = stage().newSession();
  await stage().runs.deliver(onB, { text: "[scenario:fo-abort-b] go", mode: "auto" }, listSettings());
  await eventually(async () => (requests(B, "fo-abort-b").length > 0 ? true : undefined));
  expect(await stage().runs.signalAbort(onB, "stop during failover")).toBe("sent");
  expect(await stage().result(onB)).toMatchObject({ status: "aborted", reason: "stop during failover" });
  const onBEntries = await expectIntactSession(stage(), onB);
  expect(modelTrail(onBEntries)).toEqual([`answer keel/${A}`, `change local/${B}`, `answer local/${B}`]);
  expect(messagesOf(onBEntries).at(-1)).toMatchObject({ role: "assistant", stopReason: "aborted" });

  // Nothing was asked again after the aborts.
  await sleep(2_500);
  expect(requests(A, "fo-abort-wait")).toHaveLength(1);
  expect(requests(B, "fo-abort-wait")).toEqual([]);
  expect(requests(A, "fo-abort-b")).toHaveLength(2);
  expect(requests(B, "fo-abort-b")).toHaveLength(1);
});

test("a run whose every model fails ends failed, naming each model's error", async () => {
  stage().llm.addScenario("fo-all", { turns: [], after: { text: "never" } });
  stage().llm.addFaults([
    { kind: "overloaded", match: { model: A, scenario: "fo-all" }, rate: 1, retryAfterSeconds: 1 },
    { kind: "server_error", match: { model: B, scenario: "fo-all" }, rate: 1 },
  ]);
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:fo-all] go", mode: "auto" }, listSettings());
  const result = await stage().result(ref);
  expect(result.status).toBe("failed");
  expect(result.reason).toMatch(
    new RegExp(`${A} \\(overloaded\\): .*Overloaded.*; ${B} \\(server_error\\): .*500`),
  );
  expect(requests(A, "fo-all")).toHaveLength(2);
  expect(requests(B, "fo-all")).toHaveLength(2);
  const entries = await expectIntactSession(stage(), ref);
  expect(modelTrail(entries)).toEqual([`answer keel/${A}`, `change keel/${B}`, `answer keel/${B}`]);
  expect(messagesOf(entries).at(-1)).toMatchObject({ role: "assistant", stopReason: "error" });
});
