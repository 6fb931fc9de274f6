/** Runs through the API: delivery modes, refusals, abort, approvals, state and the event stream. */
import { eventually, messagesOf, modelCalled, slowEchoScenario } from "../../support/run-harness";
import { readSse } from "../../support/sse";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;

beforeAll(async () => {
  api = await createApiStage();
});

afterAll(async () => {
  await api?.close();
});

const refOf = (sessionId: string) => ({ tenantId: api.tenants.a, sessionId });
const send = (sessionId: string, body: Record<string, unknown>) =>
  api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: body });

async function userAndAssistantTexts(sessionId: string): Promise<string[]> {
  const messages = messagesOf(await api.stage.entries(refOf(sessionId)));
  return messages.map((message) => {
    if (message.role === "user") {
      // A turn's messages share one user entry, one text block each.
      const content = message.content;
      const text =
        typeof content === "string"
          ? content
          : content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n");
      return `user: ${text}`;
    }
    if (message.role === "assistant") {
      return `assistant: ${message.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")}`;
    }
    return message.role;
  });
}

async function waitForModelCall(scenario: string): Promise<void> {
  await modelCalled(api.stage, scenario);
}

test("a message to an idle session starts a run: 202, then the session reads idle with the answer stored", async () => {
  const sessionId = api.sessionId();
  const started = await send(sessionId, { text: "hello api" });
  expect(started.status).toBe(202);
  expect(started.body).toMatchObject({
    sessionId,
    delivery: "started",
    workflowId: `keel-run/${api.tenants.a}/${sessionId}`,
    runId: expect.any(String),
  });
  await api.stage.result(refOf(sessionId));
  expect(await userAndAssistantTexts(sessionId)).toEqual([
    "user: hello api",
    "assistant: You said: hello api",
  ]);

  const view = await api.call("GET", `/v1/sessions/${sessionId}`);
  expect(view.status).toBe(200);
  expect(view.body).toMatchObject({
    sessionId,
    status: "idle",
    entryCount: 2,
    run: { runId: started.body.runId, status: "completed", turn: 1, pendingToolCalls: [] },
  });
  expect(view.body.run.usage.totalTokens).toBeGreaterThan(0);
  expect(view.body.leafId).toBe((await api.stage.entries(refOf(sessionId))).at(-1)?.id);

  const list = await api.call("GET", "/v1/sessions?limit=1000");
  expect(list.status).toBe(200);
  expect(list.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toContain(sessionId);
});

test("steer, follow-up and interrupt reach the live run", async () => {
  slowEchoScenario(api.stage, "api-steer", 1_500);
  const steered = api.sessionId();
  await send(steered, { text: "[scenario:api-steer] first" });
  const steer = await send(steered, { text: "steer me", delivery: "steer" });
  expect(steer.status).toBe(202);
  expect(steer.body.delivery).toBe("steered");
  const view = await api.call("GET", `/v1/sessions/${steered}`);
  expect(view.body.status).toBe("running");

  slowEchoScenario(api.stage, "api-follow", 1_000);
  const followed = api.sessionId();
  await send(followed, { text: "[scenario:api-follow] first" });
  const followUp = await send(followed, { text: "afterwards", delivery: "followUp" });
  expect(followUp.body.delivery).toBe("queued");

  slowEchoScenario(api.stage, "api-interrupt", 4_000);
  const interrupted = api.sessionId();
  await send(interrupted, { text: "[scenario:api-interrupt] long" });
  await waitForModelCall("api-interrupt");
  const interrupt = await send(interrupted, { text: "change of plan", delivery: "interrupt" });
  expect(interrupt.body.delivery).toBe("interrupted");

  // `auto` on a busy session steers.
  slowEchoScenario(api.stage, "api-auto", 1_500);
  const auto = api.sessionId();
  await send(auto, { text: "[scenario:api-auto] first" });
  expect((await send(auto, { text: "also this" })).body.delivery).toBe("steered");

  for (const sessionId of [steered, followed, interrupted, auto]) {
    expect((await api.stage.result(refOf(sessionId))).status).toBe("completed");
  }
  expect(await userAndAssistantTexts(followed)).toEqual([
    "user: [scenario:api-follow] first",
    "assistant: You said: first",
    "user: afterwards",
    "assistant: You said: afterwards",
  ]);
  // The steer joins the first turn's entry when it arrives before the turn starts, or opens the next.
  const steeredUsers = (await userAndAssistantTexts(steered)).filter((line) => line.startsWith("user"));
  expect(steeredUsers.join("\n").replace(/user: /g, "")).toBe("[scenario:api-steer] first\nsteer me");
  expect((await userAndAssistantTexts(interrupted)).slice(-2)).toEqual([
    "user: change of plan",
    "assistant: You said: change of plan",
  ]);
});

test("reject while busy is 409 run-busy; a full queue is 429 queue-full", async () => {
  slowEchoScenario(api.stage, "api-busy", 2_000);
  const sessionId = api.sessionId();
  await send(sessionId, { text: "[scenario:api-busy] work" });
  await waitForModelCall("api-busy");
  expectProblem(await send(sessionId, { text: "me too", delivery: "reject" }), 409, "run-busy");

  slowEchoScenario(api.stage, "api-queue", 8_000);
  const queued = api.sessionId();
  // queueLimit is not settable through the API; the default bound (32) is the one tested.
  await send(queued, { text: "[scenario:api-queue] work" });
  await waitForModelCall("api-queue");
  const answers = [];
  for (let i = 0; i < 33; i++) answers.push(await send(queued, { text: `note ${i}`, delivery: "steer" }));
  expect(answers.slice(0, 32).every((answer) => answer.status === 202)).toBe(true);
  const refused = answers[32]!;
  expectProblem(refused, 429, "queue-full");
  expect(refused.headers.get("retry-after")).toBe("1");
  await api.call("POST", `/v1/sessions/${queued}/abort`, { json: {} });
});

test("abort ends the live run; aborting an ended run is 409 no-active-run", async () => {
  api.stage.llm.addScenario("api-hung", { turns: [], after: { text: "You said: {{lastUser}}" } });
  api.stage.llm.addFaults([{ kind: "hang", match: { scenario: "api-hung" } }]);
  const sessionId = api.sessionId();
  await send(sessionId, { text: "[scenario:api-hung] think" });
  await waitForModelCall("api-hung");
  const aborted = await api.call("POST", `/v1/sessions/${sessionId}/abort`, { json: { reason: "enough" } });
  expect(aborted.status).toBe(202);
  expect((await api.stage.result(refOf(sessionId))).status).toBe("aborted");
  expectProblem(await api.call("POST", `/v1/sessions/${sessionId}/abort`), 409, "no-active-run");
});

/** A session whose run hangs in its model call (until aborted), with `followUps` queued behind it. */
async function hungRunWithFollowUps(scenario: string, followUps: string[]): Promise<string> {
  api.stage.llm.addScenario(scenario, { turns: [], after: { text: "You said: {{lastUser}}" } });
  api.stage.llm.addFaults([{ kind: "hang", match: { scenario } }]);
  const sessionId = api.sessionId();
  await send(sessionId, { text: `[scenario:${scenario}] think` });
  await waitForModelCall(scenario);
  for (const text of followUps) {
    const queued = await send(sessionId, { text, delivery: "followUp" });
    expect(queued.body).toMatchObject({ delivery: "queued" });
  }
  return sessionId;
}

test("abort answers with the queued messages the run will not read, as the run's result and agent_end do", async () => {
  const sessionId = await hungRunWithFollowUps("api-abort-queued", ["first follow-up", "second follow-up"]);
  const aborted = await api.call("POST", `/v1/sessions/${sessionId}/abort`, { json: { reason: "stop" } });
  expect(aborted.status).toBe(202);
  expect(aborted.body).toEqual({
    accepted: true,
    runId: expect.any(String),
    answered: true,
    reason: "stop",
    unprocessed: [
      { text: "first follow-up", acceptedAt: expect.any(Number) },
      { text: "second follow-up", acceptedAt: expect.any(Number) },
    ],
  });
  const result = await api.stage.result(refOf(sessionId));
  expect(result).toMatchObject({ status: "aborted", reason: "stop" });
  expect(result.unprocessed).toEqual(aborted.body.unprocessed);
  const events = await api.call("GET", `/v1/sessions/${sessionId}/events`);
  expect(events.body.events.at(-1)).toMatchObject({
    type: "agent_end",
    unprocessed: ["first follow-up", "second follow-up"],
  });
  const view = await api.call("GET", `/v1/sessions/${sessionId}`);
  expect(view.body.run.runId).toBe(aborted.body.runId);
  // Neither follow-up reached the session.
  expect(await userAndAssistantTexts(sessionId)).toEqual([
    "user: [scenario:api-abort-queued] think",
    "assistant: [INTERRUPTED]",
  ]);
});

test("an abort retried with the same Idempotency-Key gets the first answer; the run is aborted once", async () => {
  const sessionId = await hungRunWithFollowUps("api-abort-retried", ["later"]);
  const headers = { "idempotency-key": `abort-${sessionId}` };
  const first = await api.call("POST", `/v1/sessions/${sessionId}/abort`, { json: {}, headers });
  expect(first.status).toBe(202);
  expect(first.body).toMatchObject({ answered: true, reason: "aborted through the API" });
  expect(first.body.unprocessed.map((message: { text: string }) => message.text)).toEqual(["later"]);
  expect((await api.stage.result(refOf(sessionId))).status).toBe("aborted");

  const again = await api.call("POST", `/v1/sessions/${sessionId}/abort`, { json: {}, headers });
  expect(again.status).toBe(202);
  expect(again.headers.get("idempotent-replayed")).toBe("true");
  expect(again.text).toBe(first.text);
  // Without the key, the ended run is refused.
  expectProblem(
    await api.call("POST", `/v1/sessions/${sessionId}/abort`, { json: {} }),
    409,
    "no-active-run",
  );
});

test("a repeated abort gets the first abort's answer while the run is open; a closed run is not live", async () => {
  const sessionId = await hungRunWithFollowUps("api-abort-repeated", ["queued one"]);
  const ref = refOf(sessionId);
  const first = await api.stage.runs.abort(ref, { reason: "once" });
  expect(first).toMatchObject({ kind: "answered", reason: "once", unprocessed: [{ text: "queued one" }] });
  // The cancelled model call takes a moment to wind down: the run is still open here.
  const again = await api.stage.runs.abort(ref, { reason: "twice" });
  expect(again).toEqual(first);
  expect((await api.stage.result(ref)).reason).toBe("once");
  // Once the run has closed there is nothing to abort (the API's idempotency record answers a retry then).
  expect(await api.stage.runs.abort(ref, { reason: "thrice" })).toEqual({ kind: "not-live" });
});

test("abort of a run that finished is 409 no-active-run; an invalid reason is 400 and the run goes on", async () => {
  const finished = api.sessionId();
  await send(finished, { text: "done soon" });
  expect((await api.stage.result(refOf(finished))).status).toBe("completed");
  expectProblem(
    await api.call("POST", `/v1/sessions/${finished}/abort`, { json: { reason: "too late" } }),
    409,
    "no-active-run",
  );

  const live = await hungRunWithFollowUps("api-abort-invalid", ["kept"]);
  for (const reason of ["", "  \n\t", 42, "x".repeat(1_001)]) {
    expectProblem(
      await api.call("POST", `/v1/sessions/${live}/abort`, { json: { reason } }),
      400,
      "invalid-request",
    );
  }
  // The refused aborts changed nothing: the run is still working, its follow-up still queued.
  expect(await api.stage.runs.state(refOf(live))).toMatchObject({
    status: "running",
    queues: { followUp: 1 },
  });
  const aborted = await api.call("POST", `/v1/sessions/${live}/abort`, { json: { reason: "now valid" } });
  expect(aborted.body).toMatchObject({
    answered: true,
    reason: "now valid",
    unprocessed: [{ text: "kept" }],
  });
});

test("approval flow: waiting_approval status, pending call listed, approve runs the tool", async () => {
  api.stage.llm.addScenario("api-approval", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo original" } }] }],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const sessionId = api.sessionId();
  const started = await send(sessionId, {
    text: "[scenario:api-approval] go",
    policy: { rules: [{ tool: "bash", action: "ask" }], approvalTimeoutMs: 60_000 },
  });
  expect(started.status).toBe(202);
  const view = await eventually(async () => {
    const current = await api.call("GET", `/v1/sessions/${sessionId}`);
    return current.body.status === "waiting_approval" ? current : undefined;
  });
  const pending = view.body.run.pendingToolCalls[0];
  expect(pending).toMatchObject({ name: "bash", state: "awaiting_approval" });

  expectProblem(
    await api.call("POST", `/v1/sessions/${sessionId}/approvals/not-a-call`, {
      json: { decision: "approve" },
    }),
    409,
    "no-pending-approval",
  );
  const approved = await api.call("POST", `/v1/sessions/${sessionId}/approvals/${pending.toolCallId}`, {
    json: { decision: "approve", args: { command: "echo edited" } },
  });
  expect(approved.status).toBe(202);
  expect((await api.stage.result(refOf(sessionId))).status).toBe("completed");
  expect((await userAndAssistantTexts(sessionId)).at(-1)).toContain("edited");
});

test("events: SSE (deltas=false) with id = seq, resumed by Last-Event-ID without loss or repeats, ends with the run; JSON page", async () => {
  slowEchoScenario(api.stage, "api-sse", 700);
  const sessionId = api.sessionId();
  await send(sessionId, { text: "[scenario:api-sse] one" });
  await send(sessionId, { text: "two", delivery: "followUp" });
  const headers = { authorization: `Bearer ${api.keys.a}`, accept: "text/event-stream" };
  const first = await api.app.request(`/v1/sessions/${sessionId}/events?deltas=false`, { headers });
  expect(first.headers.get("content-type")).toContain("text/event-stream");
  const early = await readSse(first, (events) => events.length >= 3);
  const lastSeen = early.at(-1)!.id!;

  const rest = await readSse(
    await api.app.request(`/v1/sessions/${sessionId}/events?deltas=false`, {
      headers: { ...headers, "last-event-id": lastSeen },
    }),
    () => false,
  );
  const all = [...early, ...rest];
  const seqs = all.map((event) => Number(event.id));
  expect(seqs).toEqual(seqs.map((_, index) => index + 1));
  expect(all.at(-1)?.event).toBe("agent_end");
  for (const event of all)
    expect(JSON.parse(event.data!)).toMatchObject({ seq: Number(event.id), type: event.event });
  expect(all.filter((event) => event.event === "turn_start")).toHaveLength(2);

  // ?after= works the same; an ended run's stream ends right away after its last event.
  const tail = await readSse(
    await api.app.request(`/v1/sessions/${sessionId}/events?deltas=false&after=${seqs.length - 1}`, {
      headers,
    }),
    () => false,
  );
  expect(tail.map((event) => event.event)).toEqual(["agent_end"]);

  const page = await api.call("GET", `/v1/sessions/${sessionId}/events?after=2`);
  expect(page.status).toBe(200);
  expect(page.body.events[0].seq).toBe(3);
  expect(page.body).toMatchObject({ lastSeq: seqs.length, runEnded: true });
});
