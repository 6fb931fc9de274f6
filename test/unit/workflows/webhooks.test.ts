/**
 * The pure parts of webhooks: which run events become which webhook events and what their payloads
 * carry (contracts/webhooks.ts), the delivery workflow's queue decisions (workflows/webhook-queue.ts),
 * and a delivery's record after an attempt (activities/webhooks.ts).
 */
import { attemptRecord, nextAttemptAt } from "../../../src/activities/webhooks";
import { ANSWER_EXCERPT_CHARS, subscribes, webhookEventOf } from "../../../src/contracts/webhooks";
import type { AgentEvent, AgentEventBody } from "../../../src/core/events";
import { rememberEventId, SEEN_IDS_KEPT } from "../../../src/workflows/webhook-queue";

const context = { sessionId: "s1", runId: "r1", lastAnswer: "x".repeat(ANSWER_EXCERPT_CHARS + 50) };
const at = (body: AgentEventBody): AgentEvent => ({ ...body, seq: 7 });

test("a run's lifecycle events become webhook events with tenant-safe payloads; the rest none", () => {
  expect(webhookEventOf(at({ type: "agent_start", runId: "r1" }), context)).toEqual({
    type: "run.started",
    data: { sessionId: "s1", runId: "r1" },
  });
  const completed = webhookEventOf(
    at({ type: "agent_end", status: "completed", reason: "the agent finished" }),
    context,
  );
  expect(completed?.type).toBe("run.completed");
  expect(completed?.data.answerExcerpt).toHaveLength(ANSWER_EXCERPT_CHARS + 1);
  expect(webhookEventOf(at({ type: "agent_end", status: "failed", reason: "boom" }), context)).toMatchObject({
    type: "run.failed",
    data: { reason: "boom" },
  });
  expect(webhookEventOf(at({ type: "agent_end", status: "aborted", reason: "enough" }), context)?.type).toBe(
    "run.aborted",
  );
  const paused = webhookEventOf(
    at({
      type: "run_paused",
      reason: { type: "runBudget", budget: "cost", limit: 1, used: 1.2 },
      message: "cost budget reached",
      until: Date.UTC(2030, 0, 1),
    }),
    context,
  );
  expect(paused).toEqual({
    type: "run.paused",
    data: {
      sessionId: "s1",
      runId: "r1",
      reason: "cost budget reached",
      pauseType: "runBudget",
      pausedUntil: "2030-01-01T00:00:00.000Z",
    },
  });
  // An approval names the tool, never its arguments (they may hold anything the model wrote).
  const approval = webhookEventOf(
    at({ type: "approval_requested", toolCallId: "c1", toolName: "bash", args: { command: "echo $TOKEN" } }),
    context,
  );
  expect(approval).toEqual({
    type: "approval.required",
    data: { sessionId: "s1", runId: "r1", toolCallId: "c1", toolName: "bash" },
  });
  expect(JSON.stringify(approval)).not.toContain("TOKEN");
  expect(webhookEventOf(at({ type: "turn_start", turn: 1 }), context)).toBeUndefined();
});

test("an endpoint takes the types it names, every type with *, and always a test event", () => {
  expect(subscribes(["run.completed"], "run.completed")).toBe(true);
  expect(subscribes(["run.completed"], "run.failed")).toBe(false);
  expect(subscribes(["*"], "session.deleted")).toBe(true);
  expect(subscribes(["run.failed"], "webhook.test")).toBe(true);
});

test("the delivery queue takes an event id once and keeps a bounded memory of the latest ids", () => {
  let seen = rememberEventId([], "a") ?? [];
  expect(rememberEventId(seen, "a")).toBeUndefined();
  expect(rememberEventId(seen, undefined)).toBeUndefined();
  for (let i = 0; i < SEEN_IDS_KEPT + 10; i++) seen = rememberEventId(seen, `e${i}`) ?? seen;
  expect(seen).toHaveLength(SEEN_IDS_KEPT);
  // The oldest ids are the ones forgotten: the latest is still dropped.
  expect(rememberEventId(seen, "a")).toBeDefined();
  expect(rememberEventId(seen, `e${SEEN_IDS_KEPT + 9}`)).toBeUndefined();
});

test("a delivery's record after an attempt: delivered on 2xx; otherwise pending with the next attempt at Temporal's backoff", () => {
  const retry = { initialIntervalMs: 1000, maximumIntervalMs: 8000, giveUpAfterMs: 86_400_000 };
  expect(nextAttemptAt(0, 1, retry)).toBe(new Date(1000).toISOString());
  expect(nextAttemptAt(0, 3, retry)).toBe(new Date(4000).toISOString());
  expect(nextAttemptAt(0, 10, retry)).toBe(new Date(8000).toISOString());
  const event = {
    id: "evt_1",
    type: "run.completed",
    timestamp: "2030-01-01T00:00:00Z",
    data: { sessionId: "s" },
  } as const;
  const refused = attemptRecord(
    undefined,
    { endpointId: "wh_1", event },
    1,
    { kind: "answered", status: 503, excerpt: "busy" },
    "next",
    5,
  );
  expect(refused).toMatchObject({
    status: "pending",
    attempts: 1,
    lastResponse: { status: 503, excerpt: "busy" },
    nextAttemptAt: "next",
  });
  const delivered = attemptRecord(
    refused,
    { endpointId: "wh_1", event },
    2,
    { kind: "answered", status: 204, excerpt: "" },
    "later",
    9,
  );
  expect(delivered).toMatchObject({ status: "delivered", attempts: 2, createdAt: refused.createdAt });
  expect(delivered.nextAttemptAt).toBeUndefined();
  const unreachable = attemptRecord(
    delivered,
    { endpointId: "wh_1", event },
    1,
    { kind: "no-answer", error: "ECONNREFUSED", refused: false },
    "n",
    10,
  );
  // A new activity (attempt 1 again after a move) still counts on from the record.
  expect(unreachable).toMatchObject({ attempts: 3, lastResponse: { error: "ECONNREFUSED" } });
});
