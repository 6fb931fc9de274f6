/**
 * A message that reaches a run after its end was decided (here: aborted while its worker was dead)
 * is answered `pending` by the client, so nobody would hear of a refusal: the run hands it to the
 * next run of the session (continue-as-new), which reads and answers it. Answered by the ending
 * run itself, the delivery names that next run, or the ending run when the hand-over outlasts
 * the answer wait.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { runWorkflowId } from "../../../src/contracts/runs";
import type { SessionRef } from "../../../src/core/session-ref";
import { deliverSignal } from "../../../src/workflows/definitions";
import {
  eventually,
  expectIntactSession,
  messagesOf,
  modelCalled,
  runStageForSuite,
} from "../../support/run-harness";

const stage = runStageForSuite({ workersPerTest: true });

/** The session's stored messages (checked intact), after checking that one user message holds `text`. */
async function storedReadingOnce(ref: SessionRef, text: string) {
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const holding = messages.filter(
    (message) => message.role === "user" && JSON.stringify(message.content).includes(text),
  );
  expect(holding).toHaveLength(1);
  return messages;
}

test("a message sent while an aborted run waits for a worker starts the next run, stored once", async () => {
  stage().llm.addScenario("late-delivery", { turns: [], after: { text: "You said: {{lastUser}}" } });
  stage().llm.addFaults([{ kind: "hang", match: { scenario: "late-delivery" } }]);
  const first = await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:late-delivery] go", mode: "auto" }, stage().settings());
  await modelCalled(stage(), "late-delivery");
  await first.kill();
  // No worker: the abort and the message are recorded, neither answered.
  expect(await stage().runs.abort(ref, { reason: "stop" })).toMatchObject({ kind: "signalled" });
  const message = { text: "after the abort", mode: "auto" } as const;
  const late = await stage().runs.deliver(ref, message, stage().settings(), { deliveryId: "late-1" });
  expect(late.delivery).toBe("pending");

  await stage().startWorker();
  const handle = stage().client.workflow.getHandle(runWorkflowId(ref), late.runId, { followRuns: false });
  // The aborted run hands the message over instead of refusing it.
  await eventually(async () =>
    (await handle.describe()).status.name === "CONTINUED_AS_NEW" ? true : undefined,
  );
  expect(await stage().result(ref)).toMatchObject({ status: "completed" });
  const messages = await storedReadingOnce(ref, "after the abort");
  const last = messages.at(-1);
  expect(last?.role === "assistant" && last.content).toEqual([
    { type: "text", text: "You said: after the abort" },
  ]);
  // A retry of the same delivery id (its idempotency record lost) is answered from the next run's
  // result: no run is started, the closed one is still the latest.
  const session = stage().client.workflow.getHandle(runWorkflowId(ref));
  const next = await session.describe();
  const retried = await stage().runs.deliver(ref, message, stage().settings(), { deliveryId: "late-1" });
  expect(retried).toMatchObject({ delivery: "started", runId: next.runId });
  const after = await session.describe();
  expect({ runId: after.runId, status: after.status.name }).toEqual({
    runId: next.runId,
    status: "COMPLETED",
  });
}, 180_000);

test("a message the ending run answers names the next run, the one that reads it", async () => {
  stage().llm.addScenario("late-answered", { turns: [], after: { text: "You said: {{lastUser}}" } });
  stage().llm.addFaults([{ kind: "hang", match: { scenario: "late-answered" } }]);
  const first = await stage().startWorker();
  const ref = stage().newSession();
  const started = await stage().runs.deliver(
    ref,
    { text: "[scenario:late-answered] go", mode: "auto" },
    stage().settings(),
  );
  await modelCalled(stage(), "late-answered");
  await first.kill();
  expect(await stage().runs.abort(ref, { reason: "stop" })).toMatchObject({ kind: "signalled" });
  // Sent while no worker runs; the client waits for the answer, which a new worker gives: the
  // aborted run takes both signals in one task, so it has decided to end when it reads the message.
  const answer = stage().runs.deliver(ref, { text: "after the abort", mode: "auto" }, stage().settings(), {
    deliveryId: "late-answered-1",
    answerWaitMs: 60_000,
  });
  const aborted = stage().client.workflow.getHandle(runWorkflowId(ref), started.runId, { followRuns: false });
  await eventually(async () => {
    const { events } = await aborted.fetchHistory();
    const signalled = events?.some(
      (event) => event.workflowExecutionSignaledEventAttributes?.signalName === deliverSignal.name,
    );
    return signalled ? true : undefined;
  });
  await stage().startWorker();

  const delivered = await answer;
  expect(delivered.delivery).toBe("started");
  expect((await aborted.describe()).status.name).toBe("CONTINUED_AS_NEW");
  expect(delivered.runId).not.toBe(started.runId);
  const reader = stage().client.workflow.getHandle(runWorkflowId(ref), delivered.runId, {
    followRuns: false,
  });
  expect(await reader.result()).toMatchObject({ status: "completed" });
  await storedReadingOnce(ref, "after the abort");
}, 180_000);

/**
 * A stand-in for Slack's Web API that holds its answer to the first chat.postMessage until
 * `release()`, so a run can be caught between its end and its continue-as-new.
 */
async function heldSlack() {
  let posted!: () => void;
  const posting = new Promise<void>((resolve) => {
    posted = resolve;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const texts: string[] = [];
  const answer = (response: ServerResponse) => {
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify({ ok: true, ts: "1700000000.000300" }));
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let raw = "";
    request.on("data", (chunk: Buffer) => {
      raw += chunk.toString();
    });
    request.on("end", () => {
      texts.push(new URLSearchParams(raw).get("text") ?? raw);
      if (texts.length > 1) return answer(response);
      posted();
      void released.then(() => answer(response));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
  return { url, posting, release, texts, close: () => server.close() };
}

test("a message handed over while the ending run posts its chat reply names the ending run; the next run reads it", async () => {
  stage().llm.addScenario("handover-held", { turns: [], after: { text: "You said: {{lastUser}}" } });
  const slack = await heldSlack();
  try {
    await stage().startWorker({ KEEL_SLACK_API_URL: slack.url, KEEL_SLACK_BOT_TOKEN: "xoxb-test" });
    const ref = stage().newSession();
    const settings = stage().settings({ chatReply: { kind: "slack", channel: "C0001", threadTs: "1.2" } });
    const started = await stage().runs.deliver(
      ref,
      { text: "[scenario:handover-held] first", mode: "auto" },
      settings,
    );
    // The run has ended (its answer is being posted) and has not continued as new yet.
    await slack.posting;
    const sentAt = Date.now();
    const delivered = await stage().runs.deliver(ref, { text: "while it posts", mode: "auto" }, settings, {
      deliveryId: "handover-held-1",
      answerWaitMs: 1_500,
    });
    // The hand-over wait is part of the answer wait, not added to it (a generous bound: it only
    // has to tell a wait kept within the 1.5 s from one that ran on).
    expect(Date.now() - sentAt).toBeLessThan(5_000);
    // The wait ran out before the hand-over: the answer names the ending run, marked handed over.
    expect(delivered).toMatchObject({ delivery: "started", runId: started.runId, handedOver: true });
    const ending = stage().client.workflow.getHandle(runWorkflowId(ref), started.runId, {
      followRuns: false,
    });
    expect((await ending.describe()).status.name).toBe("RUNNING");

    slack.release();
    // Following that id leads to the run that reads the message.
    await eventually(async () =>
      (await ending.describe()).status.name === "CONTINUED_AS_NEW" ? true : undefined,
    );
    expect(await stage().result(ref)).toMatchObject({ status: "completed" });
    // The session's run names the run it continues: a client holding the ending run's id knows
    // the session's run is the one that read its message.
    const latest = await stage().runs.latestRun(ref);
    expect(latest?.runId).not.toBe(started.runId);
    expect(latest?.state?.previousRunId).toBe(started.runId);
    const messages = await storedReadingOnce(ref, "while it posts");
    const last = messages.at(-1);
    expect(last?.role === "assistant" && last.content).toEqual([
      { type: "text", text: "You said: while it posts" },
    ]);
    // Each run posted its own answer once.
    await eventually(async () => (slack.texts.length === 2 ? true : undefined));
    expect(slack.texts).toEqual(["You said: first", "You said: while it posts"]);
  } finally {
    slack.close();
  }
}, 120_000);
