/**
 * A tool call's lifecycle rules, the same on a worker and on a runner: when a stored result is
 * looked for, the replay class, the start marker of `unsafe` calls, the stored result (an approved
 * edit recorded, a result already there adopted), tool time counted only by the attempt that
 * stored the result, and the `execute_tool` span and metric of a call made after the fact.
 */
import type { SessionEntry } from "../../../src/core/session-types";
import type { ReplayClass } from "../../../src/core/tool-replay";
import { claimedAtOf } from "../../../src/environments/calls";
import { enableInstrumentation } from "../../../src/telemetry/instrumentation";
import {
  looksForStoredResult,
  markStarted,
  recordToolCall,
  replayClassOf,
  startedBefore,
  storedResult,
  storeResult,
  type ToolCallAttempt,
  type ToolCallDeps,
} from "../../../src/tool-calls/lifecycle";
import { CAPTURED_TELEMETRY, captureTelemetry } from "../../support/telemetry-capture";

const slot = { seq: 4, id: "e4", parentId: "e3", timestamp: "2026-12-05T00:00:00.000Z" };

function attempt(toolName: string, n = 1, mcp?: { tool: string; replay: ReplayClass }): ToolCallAttempt {
  return {
    ref: { tenantId: "t1", sessionId: "s1" },
    slot,
    toolCallId: "call-1",
    toolName,
    ...(mcp ? { mcp } : {}),
    attempt: n,
  };
}

/** A store of one slot, markers and usage in memory, and what each was asked. */
function fakes(stored?: SessionEntry) {
  let entry = stored;
  const marked = new Set<string>();
  const asked = { reads: 0, markerChecks: 0 };
  const recorded: { tenantId: string; atMs: number; ms: number }[] = [];
  const deps: ToolCallDeps = {
    store: {
      getEntry: async () => {
        asked.reads++;
        return entry;
      },
      putEntry: async (_ref, _seq, next) => {
        if (entry) return { entry, written: false };
        entry = next;
        return { entry: next, written: true };
      },
    },
    markers: {
      markStarted: async (_ref, subject) => {
        const key = JSON.stringify(subject);
        if (marked.has(key)) return false;
        marked.add(key);
        return true;
      },
      wasStarted: async (_ref, subject) => {
        asked.markerChecks++;
        return marked.has(JSON.stringify(subject));
      },
    },
    usage: { recordTool: async (tenantId, tool) => void recorded.push({ tenantId, ...tool }) },
    now: () => 10_000,
  };
  return { deps, asked, recorded, entry: () => entry };
}

const output = (text: string) => ({ content: [{ type: "text" as const, text }], isError: false });

describe("when a stored result is looked for", () => {
  test.each([
    ["safe", 1, false],
    ["safe", 2, true],
    ["idempotent-with-check", 1, true],
    ["unsafe", 1, true],
    ["unsafe", 3, true],
  ] as const)("a %s call at attempt %d: %s", (replay, n, looks) => {
    expect(looksForStoredResult(replay, n)).toBe(looks);
  });

  test("a call that is not safe finds an earlier activity's result at attempt 1 (a moved call) and adopts it", async () => {
    const { deps } = fakes();
    await storeResult(deps, attempt("bash"), output("earlier"), { outcome: "executed" });
    expect(await storedResult(deps, attempt("bash", 1))).toEqual({
      isError: false,
      outcome: "adopted",
      preview: "earlier",
    });
  });

  test("a safe call's first attempt does not read its slot", async () => {
    const { deps, asked } = fakes();
    expect(await storedResult(deps, attempt("ls", 1))).toBeUndefined();
    expect(asked.reads).toBe(0);
  });
});

test("replay classes: an MCP tool's as the run recorded it, a built-in's from its table, an unknown name unsafe", () => {
  expect(replayClassOf({ toolName: "read" })).toBe("safe");
  expect(replayClassOf({ toolName: "edit" })).toBe("idempotent-with-check");
  expect(replayClassOf({ toolName: "bash" })).toBe("unsafe");
  expect(replayClassOf({ toolName: "fs__read", mcp: { tool: "read", replay: "safe" } })).toBe("safe");
  expect(replayClassOf({ toolName: "no-such-tool" })).toBe("unsafe");
});

test("only unsafe calls are marked; a second attempt at a marked call may not run it", async () => {
  const { deps, asked } = fakes();
  expect(await markStarted(deps, attempt("write"))).toBe(true);
  expect(await startedBefore(deps, attempt("write", 2))).toBe(false);
  expect(asked.markerChecks).toBe(0);
  expect(await startedBefore(deps, attempt("bash"))).toBe(false);
  expect(await markStarted(deps, attempt("bash"))).toBe(true);
  expect(await startedBefore(deps, attempt("bash", 1))).toBe(true);
  expect(await markStarted(deps, attempt("bash", 2))).toBe(false);
});

test("the result records an approved edit; only the attempt that stored it counts its time", async () => {
  const { deps, recorded, entry } = fakes();
  const first = await storeResult(deps, attempt("bash"), output("edited ran"), {
    outcome: "executed",
    edit: { requested: { command: "echo asked" }, executed: { command: "echo edited" } },
    ranSinceMs: 7_500,
  });
  await first.counted;
  expect(first).toMatchObject({
    written: true,
    result: {
      isError: false,
      outcome: "executed",
      preview: expect.stringContaining("[Approved with edited"),
    },
  });
  expect(entry()).toMatchObject({
    id: "e4",
    message: {
      role: "toolResult",
      toolCallId: "call-1",
      toolName: "bash",
      details: {
        approval: { arguments: { command: "echo edited" }, requestedArguments: { command: "echo asked" } },
      },
    },
  });
  expect(recorded).toEqual([{ tenantId: "t1", atMs: 7_500, ms: 2_500 }]);
  // Another attempt's output finds the stored result: adopted, its time not counted.
  const second = await storeResult(deps, attempt("bash", 2), output("again"), {
    outcome: "executed",
    ranSinceMs: 9_000,
  });
  await second.counted;
  expect(second.written).toBe(false);
  expect(second.result.outcome).toBe("adopted");
  expect(recorded).toHaveLength(1);
});

test("tool time that cannot be recorded is logged, never thrown: the result stands", async () => {
  const { deps } = fakes();
  const warned: string[] = [];
  const failing: ToolCallDeps = {
    ...deps,
    usage: { recordTool: async () => Promise.reject(new Error("S3 down")) },
    warn: (message, fields) => void warned.push(`${message}: ${String(fields.error)}`),
  };
  const stored = await storeResult(failing, attempt("bash"), output("ran"), {
    outcome: "executed",
    ranSinceMs: 9_000,
  });
  await stored.counted;
  expect(stored.result.outcome).toBe("executed");
  expect(warned).toEqual(["the tool call's usage was not recorded: S3 down"]);
});

test("a refusal stored without a start time counts no tool time", async () => {
  const { deps, recorded } = fakes();
  const { result } = await storeResult(deps, attempt("bash"), output("refused"), {
    outcome: "unknown_outcome",
  });
  expect(result.outcome).toBe("unknown_outcome");
  expect(recorded).toEqual([]);
});

test("a runner's claim id carries the time of the claim; ids of another form carry none", () => {
  const at = Date.UTC(2026, 11, 5, 10, 0, 0, 123);
  expect(claimedAtOf(`${at.toString(36)}.${"a".repeat(24)}`)).toBe(at);
  expect(claimedAtOf("b".repeat(24))).toBeUndefined();
  expect(claimedAtOf(`${at.toString(36)}.short`)).toBeUndefined();
});

describe("a call's span and metric made after the fact (a runner's: from its claim to its result)", () => {
  const telemetry = captureTelemetry();
  beforeAll(() => telemetry.install());
  afterEach(() => {
    telemetry.spans.reset();
    enableInstrumentation(undefined);
  });
  afterAll(() => telemetry.uninstall());

  test("off: nothing is made", async () => {
    recordToolCall(attempt("bash"), { isError: false, outcome: "executed", preview: "" }, 1_000, 3_000, {});
    expect(telemetry.spans.getFinishedSpans()).toHaveLength(0);
    expect(await telemetry.toolDurations()).toEqual([]);
  });

  test("on: an execute_tool span with the worker's attributes, timed from the claim, and the tool metric", async () => {
    enableInstrumentation(CAPTURED_TELEMETRY);
    recordToolCall(attempt("bash", 2), { isError: true, outcome: "executed", preview: "" }, 1_000, 3_500, {
      "keel.environment": "laptop",
    });
    const [span] = telemetry.spans.getFinishedSpans();
    expect(span?.name).toBe("execute_tool bash");
    expect(span?.parentSpanId).toBeUndefined();
    expect(span?.attributes).toEqual({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "bash",
      "gen_ai.tool.call.id": "call-1",
      "keel.tool.replay_class": "unsafe",
      "temporal.activity.attempt": 2,
      "keel.environment": "laptop",
      "keel.tool.outcome": "executed",
      "keel.tool.is_error": true,
    });
    const [seconds, nanos] = span?.duration ?? [0, 0];
    expect(seconds + nanos / 1e9).toBeCloseTo(2.5);
    expect(await telemetry.toolDurations()).toContainEqual({
      "gen_ai.tool.name": "bash",
      "keel.tool.outcome": "executed_error",
      "keel.tool.replay_class": "unsafe",
    });
  });
});
