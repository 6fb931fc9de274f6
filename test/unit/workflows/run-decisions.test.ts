/**
 * The run's pure decisions and state operations, without a server: every branch of what opens a
 * turn, what follows a model answer, when the run stops after a turn, and which deliveries are
 * accepted where.
 */
import type { LlmTurnResult, ToolCallSummary } from "../../../src/contracts/activities";
import { DEFAULT_RUN_SETTINGS, type RunSettings } from "../../../src/contracts/runs";
import { AbortRefusal, DeliveryRefusal } from "../../../src/core/failure-types";
import { addUsage, emptyUsage } from "../../../src/core/usage";
import { HOOK_SETS } from "../../../src/workflows/hooks";
import {
  compactionDue,
  decideAfterModel,
  decideAfterTurn,
  decideTurnStart,
  MAX_SIGNALS_PER_EXECUTION,
  takeTurnInputs,
  validateAbort,
  validateDelivery,
} from "../../../src/workflows/run/decide";
import {
  createRunRecord,
  moveCall,
  newSlot,
  openCalls,
  queuedMessages,
  RECENT_DELIVERIES_KEPT,
  type RunRecord,
  releaseSlot,
  startBatch,
  takeAllQueued,
} from "../../../src/workflows/run/state";
import {
  abortState,
  callPlace,
  carry,
  deliveredBefore,
  deliveryAnswer,
  rememberDelivery,
  stateAnswer,
} from "../../../src/workflows/run/views";

function record(settings: Partial<RunSettings> = {}): RunRecord {
  let tick = 0;
  const run = createRunRecord(
    { tenantId: "t", sessionId: "s", settings: { ...DEFAULT_RUN_SETTINGS, ...settings } },
    { now: () => 1_700_000_000_000 + tick++, random: () => 0.5 },
  );
  run.cursor = { nextSeq: 0, leafId: null };
  return run;
}

const message = (text: string) => ({ text, acceptedAt: 1 });

function modelResult(overrides: Partial<LlmTurnResult> = {}): LlmTurnResult {
  return {
    stopReason: "stop",
    adopted: false,
    usage: emptyUsage(),
    contextTokens: 10,
    contextWindow: 100_000,
    textPreview: "an answer",
    toolCalls: [],
    ...overrides,
  };
}

const call = (id: string, name = "bash"): ToolCallSummary => ({
  id,
  name,
  argumentsPreview: "{}",
  label: "",
});

/** What `decideTurnStart` decides and, for a turn, the inputs the workflow then takes. */
function turnStart(run: RunRecord, continueAsNewSuggested = false) {
  const start = decideTurnStart(run, continueAsNewSuggested);
  return start.kind === "turn" ? { kind: "turn", inputs: takeTurnInputs(run, start.source) } : start;
}

describe("decideTurnStart", () => {
  test("an abort wins over everything queued", () => {
    const run = record();
    run.queues.pending.items.push(message("hi"));
    run.abortReason = "stop";
    expect(turnStart(run)).toEqual({ kind: "abort" });
  });

  test("pending and steering open the turn together; follow-ups wait while there is other work", () => {
    const run = record();
    run.queues.pending.items.push(message("prompt"));
    run.queues.steering.items.push(message("steer 1"), message("steer 2"));
    run.queues.followUp.items.push(message("later"));
    // Steering is one-at-a-time by default: one steer per turn.
    expect(turnStart(run)).toEqual({ kind: "turn", inputs: [message("prompt"), message("steer 1")] });
    expect(turnStart(run)).toEqual({ kind: "turn", inputs: [message("steer 2")] });
    expect(turnStart(run)).toEqual({ kind: "turn", inputs: [message("later")] });
    expect(turnStart(run)).toEqual({ kind: "idle" });
  });

  test("tool results waiting for the model open a turn without input, follow-ups untouched", () => {
    const run = record();
    run.needsModel = true;
    run.queues.followUp.items.push(message("later"));
    expect(turnStart(run)).toEqual({ kind: "turn", inputs: [] });
    expect(run.queues.followUp.items).toHaveLength(1);
  });

  test("the turn limit finishes the run", () => {
    const run = record({ limits: { ...DEFAULT_RUN_SETTINGS.limits, maxTurns: 3 } });
    run.turn = 3;
    run.needsModel = true;
    expect(turnStart(run)).toEqual({ kind: "finish", reason: "turn limit reached (3)" });
  });

  test("its sub-agents' turns count against the turn limit, and the reason says so", () => {
    const run = record({ limits: { ...DEFAULT_RUN_SETTINGS.limits, maxTurns: 5 } });
    run.turn = 2;
    run.subAgentTurns = 2;
    run.needsModel = true;
    expect(turnStart(run)).toEqual({ kind: "turn", inputs: [] });
    run.subAgentTurns = 3;
    expect(turnStart(run)).toEqual({
      kind: "finish",
      reason: "turn limit reached (5, 3 of them its sub-agents')",
    });
  });

  test.each([
    ["pending", "steering"],
    ["followUp", "followUp"],
  ] as const)(
    "at the turn limit, messages queued in %s are left for the run's end to hand back",
    (first, second) => {
      const run = record({ limits: { ...DEFAULT_RUN_SETTINGS.limits, maxTurns: 2 } });
      run.turn = 2;
      run.queues[first].items.push(message("one"));
      run.queues[second].items.push(message("two"));
      expect(decideTurnStart(run, false)).toEqual({ kind: "finish", reason: "turn limit reached (2)" });
      expect(takeAllQueued(run)).toEqual([message("one"), message("two")]);
    },
  );

  test("deciding takes nothing: only a turn's inputs leave the queues", () => {
    const run = record();
    run.queues.pending.items.push(message("prompt"));
    run.queues.followUp.items.push(message("later"));
    const before = structuredClone(run.queues);
    expect(decideTurnStart(run, false)).toEqual({ kind: "turn", source: "queued" });
    expect(run.queues).toEqual(before);
  });

  test("continue-as-new when Temporal suggests it, per execution turn count, or near the signal cap", () => {
    const suggested = record();
    suggested.queues.pending.items.push(message("x"));
    suggested.queues.steering.items.push(message("s1"), message("s2"));
    expect(decideTurnStart(suggested, true)).toEqual({ kind: "continue_as_new" });
    // The next execution reads them from the queues they were sent to, steering one at a time.
    expect(carry(suggested).pending).toEqual([message("x")]);
    expect(carry(suggested).steering).toEqual([message("s1"), message("s2")]);

    const long = record({ limits: { ...DEFAULT_RUN_SETTINGS.limits, turnsPerExecution: 2 } });
    long.turn = 2;
    long.needsModel = true;
    expect(decideTurnStart(long, false).kind).toBe("continue_as_new");

    const signals = record();
    signals.needsModel = true;
    signals.signalsSeen = MAX_SIGNALS_PER_EXECUTION + 1;
    expect(decideTurnStart(signals, false).kind).toBe("continue_as_new");
  });

  test("the run's own nudge is never handed back as an unread message", () => {
    const run = record();
    run.queues.pending.items.push({ ...message("nudge"), fromRun: true }, message("user"));
    expect(queuedMessages(run)).toEqual([message("user")]);
    expect(takeAllQueued(run)).toEqual([message("user")]);
    expect(run.queues.pending.items).toEqual([]);
  });
});

describe("decideAfterModel", () => {
  test("an overflow compacts and retries once, then fails; without compaction it fails at once", () => {
    const run = record();
    const overflow = modelResult({ errorKind: "context_overflow", errorMessage: "too long" });
    expect(decideAfterModel(run, overflow)).toEqual({ kind: "compact_and_retry" });
    run.overflowRetried = true;
    expect(decideAfterModel(run, overflow)).toEqual({ kind: "fail", reason: "context overflow: too long" });
    const noCompaction = record({ compaction: { ...DEFAULT_RUN_SETTINGS.compaction, enabled: false } });
    expect(decideAfterModel(noCompaction, overflow).kind).toBe("fail");
  });

  test("a non-retryable model error fails the run with its message", () => {
    expect(
      decideAfterModel(record(), modelResult({ errorKind: "non_retryable", errorMessage: "bad key" })),
    ).toEqual({
      kind: "fail",
      reason: "model error: bad key",
    });
  });

  test("empty answers are nudged up to the limit, then fail", () => {
    const run = record({ maxEmptyResponses: 2 });
    const empty = modelResult({ textPreview: "  " });
    expect(decideAfterModel(run, empty)).toEqual({ kind: "nudge" });
    run.emptyResponses = 2;
    expect(decideAfterModel(run, empty)).toEqual({
      kind: "fail",
      reason: "the model returned 3 empty responses in a row",
    });
  });

  test("tool calls run; a text answer ends the turn", () => {
    expect(decideAfterModel(record(), modelResult({ toolCalls: [call("a")], textPreview: "" }))).toEqual({
      kind: "run_tools",
    });
    expect(decideAfterModel(record(), modelResult())).toEqual({ kind: "answered" });
  });
});

describe("decideAfterTurn", () => {
  const outcome = { turn: 1, stopReason: "toolUse", text: "", toolCalls: [call("a")], failedToolCalls: 1 };

  test("a hook's stop reason ends the run", () => {
    expect(decideAfterTurn(record(), [HOOK_SETS["stop-on-tool-error"] ?? {}], outcome)).toEqual({
      kind: "finish",
      reason: "stopped after 1 failed tool call(s)",
    });
  });

  test("the tool-call limit ends the run only when the model is owed an answer", () => {
    const run = record({ limits: { ...DEFAULT_RUN_SETTINGS.limits, maxToolCalls: 1 } });
    run.toolCallCount = 1;
    run.needsModel = true;
    expect(decideAfterTurn(run, [], outcome)).toEqual({
      kind: "finish",
      reason: "tool call limit reached (1)",
    });
    run.needsModel = false;
    expect(decideAfterTurn(run, [], outcome).kind).toBe("continue");
  });

  test("a reached cost or token budget is reported with the next turn's settings (the run pauses or ends)", () => {
    const run = record({ limits: { ...DEFAULT_RUN_SETTINGS.limits, maxCostUsd: 0.5 } });
    run.usage = { ...emptyUsage(), cost: { ...emptyUsage().cost, total: 0.5 } };
    expect(decideAfterTurn(run, [], outcome)).toEqual({
      kind: "budget_reached",
      reason: "cost budget reached ($0.5)",
      next: { model: "local-chat", thinkingLevel: "off" },
    });
    const tokens = record({ limits: { ...DEFAULT_RUN_SETTINGS.limits, maxTokens: 100 } });
    tokens.usage = { ...emptyUsage(), totalTokens: 100 };
    expect(decideAfterTurn(tokens, [], outcome)).toMatchObject({
      kind: "budget_reached",
      reason: "token budget reached (100)",
    });
    tokens.usage = { ...emptyUsage(), totalTokens: 99 };
    expect(decideAfterTurn(tokens, [], outcome).kind).toBe("continue");
  });

  test("a cost budget on a model without prices stops the run instead of being ignored", () => {
    const run = record({ limits: { ...DEFAULT_RUN_SETTINGS.limits, maxCostUsd: 1 } });
    run.usage = addUsage(emptyUsage(), { ...emptyUsage(), cost: { ...emptyUsage().cost, unpriced: true } });
    expect(decideAfterTurn(run, [], outcome)).toMatchObject({
      kind: "finish",
      reason: expect.stringMatching(/no known prices/),
    });
    expect(decideAfterTurn(record(), [], outcome).kind).toBe("continue");
  });

  test("hooks change the next call's settings", () => {
    const decision = decideAfterTurn(record(), [HOOK_SETS["think-after-errors"] ?? {}], outcome);
    expect(decision).toEqual({ kind: "continue", next: { model: "local-chat", thinkingLevel: "high" } });
  });
});

test("compaction is due once the context is within the reserve of the window", () => {
  const run = record({ compaction: { enabled: true, reserveTokens: 100, keepRecentTokens: 10 } });
  run.contextWindow = 1_000;
  run.contextTokens = 900;
  expect(compactionDue(run)).toBe(false);
  run.contextTokens = 901;
  expect(compactionDue(run)).toBe(true);
  run.contextWindow = 0;
  expect(compactionDue(run)).toBe(false);
});

describe("validateDelivery", () => {
  test("the first message starts the run; later ones go where their mode says", () => {
    const run = record();
    expect(validateDelivery(run, { text: "go", mode: "auto" })).toMatchObject({
      ok: true,
      target: { queue: "pending", outcome: "started" },
    });
    run.begun = true;
    expect(validateDelivery(run, { text: "x", mode: "auto" })).toMatchObject({
      target: { outcome: "steered" },
    });
    expect(validateDelivery(run, { text: "x", mode: "followUp" })).toMatchObject({
      target: { outcome: "queued" },
    });
    expect(validateDelivery(run, { text: "x", mode: "interrupt" })).toMatchObject({
      target: { queue: "pending", outcome: "interrupted" },
    });
    expect(validateDelivery(run, { text: "x", mode: "reject" })).toMatchObject({
      ok: false,
      type: DeliveryRefusal.busy,
    });
  });

  test("bad payloads are refused with a clear reason, whoever sent them", () => {
    const run = record();
    for (const bad of [undefined, null, 42, {}, { text: "" }, { text: 7, mode: "auto" }]) {
      expect(validateDelivery(run, bad)).toMatchObject({ ok: false, type: DeliveryRefusal.invalid });
    }
    expect(validateDelivery(run, { text: "x", mode: "sideways" })).toEqual({
      ok: false,
      type: DeliveryRefusal.invalid,
      message: 'mode must be one of auto, steer, followUp, interrupt, reject (got "sideways")',
    });
  });

  test("an ended or aborted run refuses; a full queue refuses", () => {
    const ended = record();
    ended.ended = true;
    expect(validateDelivery(ended, { text: "x", mode: "auto" })).toMatchObject({
      type: DeliveryRefusal.ended,
    });
    const aborted = record();
    aborted.abortReason = "stop";
    expect(validateDelivery(aborted, { text: "x", mode: "auto" })).toMatchObject({
      type: DeliveryRefusal.ended,
    });
    const full = record({ queueLimit: 1 });
    full.begun = true;
    full.queues.steering.items.push(message("waiting"));
    expect(validateDelivery(full, { text: "x", mode: "steer" })).toMatchObject({
      type: DeliveryRefusal.queueFull,
    });
  });
});

describe("validateAbort", () => {
  test("a reason is optional; given, it is a non-blank string of at most 1,000 characters", () => {
    const run = record();
    expect(validateAbort(run, {})).toEqual({ ok: true, reason: "aborted by user" });
    expect(validateAbort(run, { reason: "  stop\n" })).toEqual({ ok: true, reason: "  stop\n" });
    expect(validateAbort(run, { reason: "停" })).toEqual({ ok: true, reason: "停" });
    expect(validateAbort(run, { reason: "x".repeat(1_000) })).toMatchObject({ ok: true });
    for (const bad of [{ reason: "" }, { reason: " \t\r\n" }, { reason: 7 }, { reason: "x".repeat(1_001) }]) {
      expect(validateAbort(run, bad)).toMatchObject({ ok: false, type: AbortRefusal.invalid });
    }
    for (const bad of [undefined, null, "stop", ["stop"]]) {
      expect(validateAbort(run, bad)).toMatchObject({ ok: false, type: AbortRefusal.invalid });
    }
  });

  test("an ended run refuses; a run already aborting accepts (its first reason stands)", () => {
    const ended = record();
    ended.ended = true;
    expect(validateAbort(ended, { reason: "stop" })).toMatchObject({ ok: false, type: AbortRefusal.ended });
    const aborting = record();
    aborting.abortReason = "first";
    expect(validateAbort(aborting, { reason: "second" })).toEqual({ ok: true, reason: "second" });
  });

  test("the queued messages an abort reports are the ones the run's end takes, in the same order", () => {
    const run = record();
    run.queues.followUp.items.push(message("f"));
    run.queues.steering.items.push(message("s"));
    run.queues.pending.items.push(message("p"));
    const reported = queuedMessages(run);
    expect(reported.map((item) => item.text)).toEqual(["p", "s", "f"]);
    expect(takeAllQueued(run)).toEqual(reported);
  });
});

describe("run state", () => {
  test("slots chain ids and sequence numbers; a released slot is handed out again", () => {
    const run = record();
    const first = newSlot(run);
    const second = newSlot(run);
    expect(first).toMatchObject({ seq: 0, parentId: null });
    expect(second).toMatchObject({ seq: 1, parentId: first.id });
    releaseSlot(run, second);
    expect(newSlot(run)).toMatchObject({ seq: 1, parentId: first.id });
  });

  test("a batch registers its calls in source order; open calls and the state query follow the registry", () => {
    const run = record();
    const batch = startBatch(run, [call("a"), call("b", "read")]);
    expect(batch.map((item) => item.slot.seq)).toEqual([0, 1]);
    moveCall(run, "a", "awaiting_approval");
    moveCall(run, "b", "running");
    moveCall(run, "b", "completed");
    expect(openCalls(run).map((item) => item.summary.id)).toEqual(["a"]);
    expect(stateAnswer(run).pendingToolCalls).toEqual([
      { toolCallId: "a", name: "bash", state: "awaiting_approval", argumentsPreview: "{}", ranOn: "worker" },
    ]);
    // Terminal states never change.
    moveCall(run, "b", "failed");
    expect(run.calls.calls.find((item) => item.toolCallId === "b")?.state).toBe("completed");
  });

  test("ending hands back every queued message; the carried state keeps the queues", () => {
    const run = record();
    run.queues.steering.items.push(message("s"));
    run.queues.followUp.items.push(message("f"));
    expect(carry(run)).toMatchObject({ steering: [message("s")], followUp: [message("f")] });
    expect(takeAllQueued(run)).toEqual([message("s"), message("f")]);
    expect(run.queues.steering.items).toEqual([]);
  });
});

describe("answers read by query: deliveries by id and the abort state", () => {
  test("a delivery is answered by its id (a result or a refusal); an unknown id is null; the carried state keeps them", () => {
    const run = record();
    expect(deliveryAnswer(run, "d1")).toBeNull();
    rememberDelivery(run, "d1", { result: { delivery: "steered", queueLength: 1 } });
    rememberDelivery(run, "d2", { refusal: { type: DeliveryRefusal.queueFull, message: "full" } });
    expect(deliveryAnswer(run, "d1")).toEqual({ result: { delivery: "steered", queueLength: 1 } });
    expect(deliveryAnswer(run, "d2")).toEqual({
      refusal: { type: DeliveryRefusal.queueFull, message: "full" },
    });
    expect(deliveredBefore(run, undefined)).toBeUndefined();
    expect(carry(run).recentDeliveries?.map((delivery) => delivery.updateId)).toEqual(["d1", "d2"]);
  });

  test("the run remembers its last RECENT_DELIVERIES_KEPT deliveries", () => {
    const run = record();
    for (let index = 0; index <= RECENT_DELIVERIES_KEPT; index++) {
      rememberDelivery(run, `d${index}`, { result: { delivery: "queued", queueLength: 1 } });
    }
    expect(deliveryAnswer(run, "d0")).toBeNull();
    expect(deliveryAnswer(run, `d${RECENT_DELIVERIES_KEPT}`)).not.toBeNull();
  });

  test("the abort state: running, then aborting with the first reason and the queued messages; ended without an abort", () => {
    const run = record();
    expect(abortState(run)).toEqual({ kind: "running" });
    run.queues.followUp.items.push(message("later"));
    run.abortReason = "stop";
    expect(abortState(run)).toEqual({ kind: "aborting", reason: "stop", unprocessed: [message("later")] });
    const finished = record();
    finished.ended = true;
    expect(abortState(finished)).toEqual({ kind: "ended" });
  });
});

describe("where a call runs", () => {
  test("the worker, the run's runner environment, an MCP server's worker, or a sub-agent", () => {
    const run = record();
    expect(callPlace(run, "bash")).toBe("worker");
    expect(callPlace(run, "task")).toBe("sub-agent");
    run.settings = { ...run.settings, environment: "laptop" };
    expect(callPlace(run, "bash")).toBe("laptop");
    run.settings = { ...run.settings, environment: "worker" };
    expect(callPlace(run, "bash")).toBe("worker");
  });
});
