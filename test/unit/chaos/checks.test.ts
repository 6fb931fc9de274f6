/** The chaos suite's end checks find each kind of broken session they are meant to find. */
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import type { AgentMessage } from "../../../src/core/messages";
import { createMessageEntry } from "../../../src/core/session-entries";
import type { SessionEntry } from "../../../src/core/session-types";
import { emptyUsage } from "../../../src/core/usage";
import type { JournalEntry } from "../../../src/providers/local-server/types";
import {
  checkBudgetTree,
  checkDeliveries,
  checkRuns,
  checkStoredSession,
  checkUnsafeCallLines,
  repeatedModelCalls,
  type StoredSession,
} from "../../chaos/checks";
import type { SessionPlan } from "../../chaos/plan";
import type { RunOutcome, SessionRecord } from "../../chaos/sessions";
import { assistant, toolCall, toolResult, user } from "../core/helpers";

/** Stores `messages` at seqs 0..n-1, each the child of the one before, leaving out `skip`. */
function stored(messages: AgentMessage[], skip: number[] = []): StoredSession {
  const entries: Array<{ seq: number; entry: SessionEntry }> = [];
  messages.forEach((message, seq) => {
    const entry = createMessageEntry(
      { id: `e${seq}`, parentId: seq === 0 ? null : `e${seq - 1}`, timestamp: "2026-01-01T00:00:00.000Z" },
      message,
    );
    if (!skip.includes(seq)) entries.push({ seq, entry });
  });
  return { entries, gaps: skip, nextSeq: skip[0] ?? messages.length };
}

const kinds = (violations: Array<{ kind: string }>) => violations.map((violation) => violation.kind);

const toolTurn = [
  user("do it"),
  assistant([toolCall("c1", "read"), toolCall("c2", "bash")]),
  toolResult("c1"),
  toolResult("c2", "ok", "bash"),
  assistant([{ type: "text", text: "done" }]),
];

describe("checkStoredSession", () => {
  it("passes an intact session", () => {
    expect(checkStoredSession("s", stored(toolTurn))).toEqual([]);
  });

  it("finds a missing seq after a parallel batch, and the tool call left without its result", () => {
    expect(kinds(checkStoredSession("s", stored(toolTurn, [2])))).toEqual([
      "seq_gap",
      "broken_parent_chain",
      "dangling_tool_call",
    ]);
  });

  it("finds a tool call answered twice", () => {
    const twice = [...toolTurn.slice(0, 4), toolResult("c2", "again", "bash"), toolTurn[4] as AgentMessage];
    expect(kinds(checkStoredSession("s", stored(twice)))).toEqual(["duplicate_tool_result"]);
  });

  it("finds adjacent user messages", () => {
    const adjacent = [user("one"), user("two"), assistant([{ type: "text", text: "hi" }])];
    expect(kinds(checkStoredSession("s", stored(adjacent)))).toEqual(["adjacent_user_messages"]);
  });

  it("finds an entry whose parent is not stored before it", () => {
    const session = stored([user("one"), assistant([{ type: "text", text: "hi" }])]);
    const second = session.entries[1] as { seq: number; entry: SessionEntry };
    second.entry = { ...second.entry, parentId: "elsewhere" };
    expect(kinds(checkStoredSession("s", session))).toEqual(["broken_parent_chain"]);
  });
});

describe("checkDeliveries", () => {
  const entries = stored([
    user("first"),
    assistant([{ type: "text", text: "a" }]),
    user("second"),
  ]).entries.map(({ entry }) => entry);
  const sent = (text: string, confirmed = true) => ({
    text,
    idempotencyKey: `k-${text}`,
    confirmed,
    attempts: 1,
  });

  it("accepts each message stored once", () => {
    expect(checkDeliveries("s", entries, [sent("first"), sent("second")])).toEqual([]);
  });

  it("finds a message stored twice and a confirmed message that is missing", () => {
    const doubled = [...entries, ...stored([user("second")]).entries.map(({ entry }) => entry)];
    expect(kinds(checkDeliveries("s", doubled, [sent("second"), sent("third")]))).toEqual([
      "message_delivered_twice",
      "message_lost",
    ]);
  });

  it("accepts a clear refusal of a message that is not stored, not one that is", () => {
    const refused = (text: string) => ({ ...sent(text, false), refused: true, error: "HTTP 409: run-ended" });
    expect(checkDeliveries("s", entries, [refused("third")])).toEqual([]);
    expect(kinds(checkDeliveries("s", entries, [refused("second")]))).toEqual(["refused_but_stored"]);
  });

  it("accepts a confirmed message a run handed back unread, not one also stored", () => {
    expect(checkDeliveries("s", entries, [sent("third")], ["third"])).toEqual([]);
    expect(kinds(checkDeliveries("s", entries, [sent("second")], ["second"]))).toEqual([
      "handed_back_but_stored",
    ]);
  });

  it("reports a message the API never confirmed", () => {
    expect(kinds(checkDeliveries("s", entries, [sent("third", false)]))).toEqual(["delivery_not_confirmed"]);
  });
});

describe("repeatedModelCalls", () => {
  const call = (seq: number, digest: string, time: string): JournalEntry => ({
    seq,
    time,
    path: "/v1/chat/completions",
    api: "openai-completions",
    model: "local-chat",
    stream: true,
    scenario: "chaos",
    turn: 0,
    digest,
    status: 200,
    outcome: "completed",
  });
  const storedAt = Date.parse("2026-01-01T00:00:10.000Z");
  const answers = [{ sessionId: "s", seq: 3, digest: "d1", storedAtMs: storedAt }];

  it("flags a call for an answer that was already stored, not the calls before it", () => {
    const journal = [
      call(1, "d1", "2026-01-01T00:00:05.000Z"), // cut off before its answer was stored
      call(2, "d1", "2026-01-01T00:00:09.500Z"), // the call whose answer was stored
      call(3, "d2", "2026-01-01T00:00:20.000Z"), // another request
      call(4, "d1", "2026-01-01T00:00:30.000Z"), // a repeat
    ];
    expect(repeatedModelCalls(journal, answers)).toEqual([
      { sessionId: "s", seq: 3, digest: "d1", afterStoredSeconds: 20, journalSeq: 4 },
    ]);
  });

  it("does not flag a call within the Last-Modified resolution of the write", () => {
    expect(repeatedModelCalls([call(1, "d1", "2026-01-01T00:00:10.900Z")], answers)).toEqual([]);
  });
});

describe("checkRuns", () => {
  const plan = (abortAfterMs?: number): SessionPlan => ({
    index: 0,
    sessionId: "s",
    scenario: "s",
    toolTurns: 1,
    modelLatencyMs: 1,
    ...(abortAfterMs !== undefined ? { abortAfterMs } : {}),
  });
  const record = (runs: SessionRecord["runs"], abortAfterMs?: number): SessionRecord => ({
    plan: plan(abortAfterMs),
    messages: [],
    runs,
  });

  it("accepts a completed run, and an aborted run whose follow-up completed", () => {
    expect(checkRuns(record([{ kind: "ended", status: "completed", reason: "", ms: 1 }]))).toEqual([]);
    const aborted = record(
      [
        { kind: "ended", status: "aborted", reason: "chaos", ms: 1 },
        { kind: "ended", status: "completed", reason: "", ms: 1 },
      ],
      500,
    );
    expect(checkRuns(aborted)).toEqual([]);
  });

  it("finds an abort the API never answered", () => {
    const unanswered = {
      ...record(
        [
          { kind: "ended", status: "completed", reason: "", ms: 1 },
          { kind: "ended", status: "completed", reason: "", ms: 1 },
        ],
        500,
      ),
      abort: { requested: false, answered: false, detail: "409 idempotency-key-in-use for 90 s" },
    };
    expect(kinds(checkRuns(unanswered))).toEqual(["abort_not_answered"]);
  });

  it("finds stuck and failed runs, and a session not usable after its abort", () => {
    expect(
      kinds(
        checkRuns(record([{ kind: "stuck", lastStatus: "running", ms: 180_000, sinceLastFaultMs: 180_000 }])),
      ),
    ).toEqual(["stuck_run"]);
    const failedAbort = record(
      [
        { kind: "ended", status: "failed", reason: "activity failed", ms: 1 },
        { kind: "stuck", lastStatus: "running", ms: 180_000, sinceLastFaultMs: 180_000 },
      ],
      500,
    );
    expect(kinds(checkRuns(failedAbort))).toEqual(["run_failed", "stuck_run", "unusable_after_abort"]);
  });

  it("takes Temporal's word for a run a later run followed before the API showed its end", () => {
    const completed = { kind: "ended", status: "completed", reason: "the agent finished", ms: 1 } as const;
    const followed = record([
      { kind: "superseded", runId: "run-1", byRunId: "run-2", ms: 5_000, next: completed },
    ]);
    const temporal = (statuses: Record<string, string>) => (runId: string) => statuses[runId];
    expect(checkRuns(followed, "", temporal({ "run-1": "COMPLETED", "run-2": "COMPLETED" }))).toEqual([]);
    expect(kinds(checkRuns(followed, "", temporal({ "run-1": "FAILED", "run-2": "COMPLETED" })))).toEqual([
      "run_failed",
    ]);
    expect(kinds(checkRuns(followed))).toEqual(["run_failed"]);
  });

  it("judges a run that continued as new by how its continuation ended, also as an abort's follow-up", () => {
    const temporal = (statuses: Record<string, string>) => (runId: string) => statuses[runId];
    const continued = (next: RunOutcome): RunOutcome => ({
      kind: "superseded",
      runId: "run-2",
      byRunId: "run-3",
      ms: 60,
      next,
    });
    const aborted = { kind: "ended", status: "aborted", reason: "chaos", ms: 1 } as const;
    const completed = { kind: "ended", status: "completed", reason: "", ms: 1 } as const;
    const stuck = { kind: "stuck", lastStatus: "running", ms: 180_000, sinceLastFaultMs: 180_000 } as const;
    const handedOver = temporal({ "run-2": "CONTINUED_AS_NEW", "run-3": "COMPLETED" });
    expect(checkRuns(record([aborted, continued(completed)], 500), "", handedOver)).toEqual([]);
    expect(kinds(checkRuns(record([aborted, continued(stuck)], 500), "", handedOver))).toEqual([
      "stuck_run",
      "unusable_after_abort",
    ]);
    // A continuation of a continuation is followed to its end.
    const twice = continued({
      kind: "superseded",
      runId: "run-3",
      byRunId: "run-4",
      ms: 60,
      next: completed,
    });
    expect(
      checkRuns(record([twice]), "", temporal({ "run-2": "CONTINUED_AS_NEW", "run-3": "CONTINUED_AS_NEW" })),
    ).toEqual([]);
    // Without Temporal's word that it continued, a run that vanished is a failure.
    expect(kinds(checkRuns(record([aborted, continued(completed)], 500)))).toEqual([
      "run_failed",
      "unusable_after_abort",
    ]);
  });
});

describe("checkUnsafeCallLines", () => {
  const entries = stored([
    user("go"),
    assistant([
      toolCall("c1", "bash", { command: "echo start >> log.txt; sleep 1; echo ok" }),
      toolCall("c2", "bash", { command: "sleep 2; echo slept >> log.txt; echo ok" }),
    ]),
    toolResult("c1", "ok", "bash"),
    { ...toolResult("c2", UNKNOWN_OUTCOME_TEXT, "bash"), isError: true },
    assistant([toolCall("c3", "bash", { command: "echo start >> log.txt; sleep 1; echo ok" })]),
  ]).entries.map(({ entry }) => entry);

  // e2 (c1's result, ok) and e3 (c2's, unknown outcome) are one batch; the batch's snapshot is at e3.
  const batchSnapshot = new Set(["e3"]);

  it("accepts a line per stored call, and no line of a call whose result does not say it ran", () => {
    expect(checkUnsafeCallLines("s", entries, "start\nslept\nstart\n", batchSnapshot)).toEqual([]);
    expect(checkUnsafeCallLines("s", entries, "start\n", batchSnapshot)).toEqual([]);
  });

  it("finds a call that ran again: more lines than stored calls ask for", () => {
    const found = checkUnsafeCallLines("s", entries, "start\nslept\nslept\nstart\n", batchSnapshot);
    expect(kinds(found)).toEqual(["unsafe_call_ran_twice"]);
    expect(found[0]?.detail).toContain('"slept" 2 times');
  });

  it("finds a lost change: fewer lines than recorded calls whose results say they ran", () => {
    for (const snapshotted of [batchSnapshot, new Set(["e2"])]) {
      const found = checkUnsafeCallLines("s", entries, "slept\n", snapshotted);
      expect(kinds(found)).toEqual(["stored_change_missing"]);
      expect(found[0]?.detail).toContain('"start" 0 times; 1 bash calls');
    }
  });

  it("does not count a call whose change no snapshot recorded (its own failed, its batch's never taken)", () => {
    expect(checkUnsafeCallLines("s", entries, "", new Set())).toEqual([]);
    expect(checkUnsafeCallLines("s", entries, "", new Set(["e1", "e4"]))).toEqual([]);
  });
});

describe("checkBudgetTree", () => {
  const perCall = { tokens: 2_500, costUsd: 0.003 };
  /** A tagged model answer reporting `tokens` and `costUsd`. */
  const answer = (
    content: Parameters<typeof assistant>[0],
    tokens = perCall.tokens,
    costUsd = perCall.costUsd,
  ) =>
    assistant([{ type: "text", text: "[call:0123456789abcdef] step" }, ...content], {
      usage: { ...emptyUsage(), totalTokens: tokens, cost: { ...emptyUsage().cost, total: costUsd } },
    });
  const entriesOf = (messages: AgentMessage[]) => stored(messages).entries.map(({ entry }) => entry);
  /** A parent: one call, then a call with `tasks` parallel task calls, then its final answer. */
  const parent = (tasks: number) =>
    entriesOf([
      user("go"),
      answer([toolCall("w", "write")]),
      toolResult("w"),
      answer([...Array(tasks).keys()].map((index) => toolCall(`t${index}`, "task"))),
      ...[...Array(tasks).keys()].map((index) => toolResult(`t${index}`, "report", "task")),
      answer([]),
    ]);
  /** A sub-agent of `calls` model calls. */
  const child = (calls: number, tokens = perCall.tokens) =>
    entriesOf([user("explore"), ...[...Array(calls).keys()].map(() => answer([], tokens))]);
  const oneCall = () => child(1);
  const threeCalls = () => child(3);
  const fourCalls = () => child(4);
  const tree = (
    budget: { maxCostUsd: number; maxTokens: number },
    children: Array<readonly SessionEntry[]>,
  ) => ({
    sessionId: "p",
    budget,
    entries: parent(children.length),
    children: new Map(children.map((entries, index) => [`p-t${index}`, entries])),
    childOf: (callId: string) => `p-${callId}`,
  });

  it("passes a tree within its budget plus one model call per run", () => {
    // 4.5 calls: 2 used before the batch, 1.25 calls each for two children; each spends 2 (one past).
    expect(
      checkBudgetTree(tree({ maxCostUsd: 0.0135, maxTokens: 11_250 }, [child(2), child(2)]), perCall),
    ).toEqual([]);
  });

  it("finds a child spending more than its share plus one call, and the tree past its bound", () => {
    // Shares of 1 call (2 × 2,500 tokens left of 10,000 after the parent's two): 3 calls is one too many,
    // yet the tree (7 calls) is within 10,000 + 3 × 2,500.
    const child = checkBudgetTree(
      tree({ maxCostUsd: 0, maxTokens: 10_000 }, [threeCalls(), oneCall()]),
      perCall,
    );
    expect(child.map(({ sessionId, kind }) => [sessionId, kind])).toEqual([
      ["p-t0", "budget_exceeded_by_child"],
    ]);
    // A cost budget of 4 calls, shares of 1 call: children of 4 calls each, 11 calls in a tree of 3 runs.
    const overTree = checkBudgetTree(
      tree({ maxCostUsd: 0.012, maxTokens: 0 }, [fourCalls(), fourCalls()]),
      perCall,
    );
    expect(kinds(overTree)).toEqual([
      "budget_exceeded_by_child",
      "budget_exceeded_by_child",
      "budget_exceeded_by_tree",
    ]);
  });

  it("finds an answer that does not report the scripted usage", () => {
    expect(
      kinds(checkBudgetTree(tree({ maxCostUsd: 0, maxTokens: 100_000 }, [child(1, 10)]), perCall)),
    ).toEqual(["budget_call_usage_unexpected"]);
  });
});
