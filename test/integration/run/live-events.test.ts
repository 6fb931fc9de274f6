/**
 * Live events on the run's stream: the model's deltas and bash's output so far arrive while the
 * activity runs, in order, and rebuild exactly what is stored; a worker killed mid-stream leads to
 * a reset and the retried text; deltas never reach the session store.
 */
import { DEFAULT_LIVE_EVENT_OPTIONS } from "../../../src/activities/live-events";
import { runWorkflowId } from "../../../src/contracts/runs";
import type { AssistantMessage } from "../../../src/core/messages";
import { eventually, expectIntactSession, messagesOf, runStageForSuite } from "../../support/run-harness";
import { collectRunStream, rebuiltText, textOf } from "../../support/run-stream";

const stage = runStageForSuite({ workersPerTest: true });

const LONG_ANSWER = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");

test("deltas arrive before the message ends, in order, and rebuild the stored message exactly", async () => {
  stage().llm.addScenario("live-text", { turns: [{ text: LONG_ANSWER, thinking: "let me think about it" }] });
  stage().llm.addFaults([{ kind: "slow", match: { scenario: "live-text" }, times: 1, tokensPerSecond: 40 }]);
  await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:live-text] talk", mode: "auto" },
    stage().settings({ model: "local-anthropic", thinkingLevel: "low" }),
  );
  const items = await collectRunStream(stage().client, runWorkflowId(ref));
  expect((await stage().result(ref)).status).toBe("completed");

  const entries = await expectIntactSession(stage(), ref);
  const assistant = entries.find((entry) => entry.type === "message" && entry.message.role === "assistant") as
    | { id: string; message: AssistantMessage }
    | undefined;
  if (!assistant) throw new Error("no assistant entry stored");
  const events = items.map((item) => item.event);
  const updates = items.filter((item) => item.event.type === "message_update");
  // Coalesced, yet streamed: several batches for a 60-word answer at 40 words a second.
  expect(updates.length).toBeGreaterThan(3);
  expect(updates.length).toBeLessThan(60);
  expect(rebuiltText(events, assistant.id)).toBe(textOf(assistant.message));
  expect(textOf(assistant.message)).toBe(LONG_ANSWER);
  const thinking = events.flatMap((event) =>
    event.type === "message_update" && event.assistantMessageEvent.type === "thinking_delta"
      ? [event.assistantMessageEvent.delta]
      : [],
  );
  expect(thinking.join("")).toBe("let me think about it");
  expect(assistant.message.content).toContainEqual(
    expect.objectContaining({ type: "thinking", thinking: "let me think about it" }),
  );

  // Order: message_start < first delta < … < last delta < message_end, and the first delta
  // reached the subscriber well before the message ended.
  const start = items.findIndex(
    (item) => item.event.type === "message_start" && item.event.entryId === assistant.id,
  );
  const end = items.findIndex(
    (item) => item.event.type === "message_end" && item.event.entryId === assistant.id,
  );
  const first = items.indexOf(updates[0]!);
  expect(start).toBeLessThan(first);
  expect(items.indexOf(updates.at(-1)!)).toBeLessThan(end);
  expect(items[end]!.at - updates[0]!.at).toBeGreaterThan(500);
  expect(items.map((item) => item.offset)).toEqual(items.map((_, index) => items[0]!.offset + index));
  // Numbered events keep their order too.
  const seqs = events.flatMap((event) => ("seq" in event ? [event.seq] : []));
  expect(seqs).toEqual([...seqs].sort((a, b) => a - b));

  // Nothing but the final messages is stored.
  expect(JSON.stringify(entries)).not.toContain("message_update");
});

test("an answer that fits one batch costs no signal: its deltas ride on the activity's result", async () => {
  stage().llm.addScenario("live-quick", { turns: [{ text: "a short and quick answer" }] });
  await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:live-quick] hi", mode: "auto" }, stage().settings());
  const items = await collectRunStream(stage().client, runWorkflowId(ref));
  expect((await stage().result(ref)).status).toBe("completed");
  const assistant = messagesOf(await expectIntactSession(stage(), ref)).find(
    (message): message is AssistantMessage => message.role === "assistant",
  );
  if (!assistant) throw new Error("no assistant message stored");
  const events = items.map((item) => item.event);
  const end = events.find((event) => event.type === "message_end" && event.role === "assistant");
  if (end?.type !== "message_end") throw new Error("no message_end on the stream");
  // Published by the run from the result, before the message's end, and whole.
  expect(rebuiltText(events, end.entryId)).toBe("a short and quick answer");
  expect(items.findIndex((item) => item.event.type === "message_update")).toBeLessThan(events.indexOf(end));
  const history = await stage().client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
  const signals = (history.events ?? []).filter((event) => event.workflowExecutionSignaledEventAttributes);
  expect(signals).toHaveLength(0);
});

test("bash publishes its output while it runs, and the stored result holds all of it", async () => {
  stage().llm.addScenario("live-bash", {
    turns: [
      {
        toolCalls: [
          { name: "bash", arguments: { command: "for i in 1 2 3 4; do echo line$i; sleep 0.6; done" } },
        ],
      },
    ],
    after: { text: "done" },
  });
  await stage().startWorker({ KEEL_SANDBOX: "off", KEEL_SINGLE_TENANT: stage().tenantId });
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:live-bash] count", mode: "auto" }, stage().settings());
  const items = await collectRunStream(stage().client, runWorkflowId(ref));
  const updates = items.flatMap((item) =>
    item.event.type === "tool_execution_update" ? [{ ...item, partial: item.event.partial }] : [],
  );
  expect(updates.length).toBeGreaterThanOrEqual(2);
  // Each update holds the output so far: it only grows.
  for (const [index, update] of updates.entries()) {
    if (index > 0) expect(update.partial.startsWith(updates[index - 1]!.partial.trimEnd())).toBe(true);
  }
  expect(updates[0]!.partial).toContain("line1");
  expect(updates[0]!.partial).not.toContain("line4");
  const end = items.find((item) => item.event.type === "tool_execution_end");
  expect(end && end.offset > updates.at(-1)!.offset).toBe(true);
  const result = messagesOf(await expectIntactSession(stage(), ref)).find(
    (message) => message.role === "toolResult",
  );
  expect(JSON.stringify(result)).toContain("line4");
});

test("a worker killed mid-stream: the retry publishes a reset, then the whole text again", async () => {
  stage().llm.addScenario("live-crash", { turns: [{ text: LONG_ANSWER }] });
  stage().llm.addFaults([{ kind: "slow", match: { scenario: "live-crash" }, times: 2, tokensPerSecond: 20 }]);
  const first = await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:live-crash] talk", mode: "auto" }, stage().settings());
  const collected = collectRunStream(stage().client, runWorkflowId(ref));
  // Wait for deltas of the first attempt to be on the stream, then kill its worker.
  await eventually(async () => {
    const offset = await stage()
      .client.workflow.getHandle(runWorkflowId(ref))
      .query<number>("__temporal_workflow_stream_offset");
    return offset > 6 ? true : undefined;
  });
  await first.kill();
  await stage().startWorker();
  const items = await collected;
  expect((await stage().result(ref)).status).toBe("completed");

  const entries = await expectIntactSession(stage(), ref);
  const assistants = messagesOf(entries).filter((message) => message.role === "assistant");
  expect(assistants).toHaveLength(1);
  const assistant = entries.find(
    (entry) => entry.type === "message" && entry.message.role === "assistant",
  ) as { id: string; message: AssistantMessage };
  const updates = items.flatMap((item) => (item.event.type === "message_update" ? [item.event] : []));
  const reset = updates.findIndex((event) => event.assistantMessageEvent.type === "reset");
  expect(reset).toBeGreaterThan(0);
  expect(updates.slice(0, reset).every((event) => event.attempt === 1)).toBe(true);
  expect(updates.slice(reset).every((event) => event.attempt === 2)).toBe(true);
  // What attempt 1 streamed was a strict prefix: appending would have shown it twice.
  const before = rebuiltText(updates.slice(0, reset), assistant.id);
  expect(before.length).toBeGreaterThan(0);
  expect(LONG_ANSWER.startsWith(before)).toBe(true);
  expect(rebuiltText(updates, assistant.id)).toBe(textOf(assistant.message));
  expect(textOf(assistant.message)).toBe(LONG_ANSWER);
});

test("a rate-limited call publishes a retry event with its wait, then the retry's reset and text", async () => {
  stage().llm.addScenario("live-retry", { turns: [{ text: "after the limit" }] });
  stage().llm.addFaults([
    { kind: "rate_limit", match: { scenario: "live-retry" }, times: 1, retryAfterSeconds: 3 },
  ]);
  await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:live-retry] go", mode: "auto" }, stage().settings());
  const events = (await collectRunStream(stage().client, runWorkflowId(ref))).map((item) => item.event);
  expect((await stage().result(ref)).status).toBe("completed");
  const retry = events.findIndex((event) => event.type === "retry");
  expect(events[retry]).toMatchObject({ attempt: 1, providerErrors: 1, maxAttempts: 8, delayMs: 3_000 });
  expect(events[retry]).toMatchObject({ error: expect.stringContaining("HTTP 429") });
  const reset = events.findIndex(
    (event) => event.type === "message_update" && event.assistantMessageEvent.type === "reset",
  );
  expect(reset).toBeGreaterThan(retry);
  const assistant = messagesOf(await expectIntactSession(stage(), ref)).filter((m) => m.role === "assistant");
  expect(assistant).toHaveLength(1);
});

test("a worker lost during a model call does not count as a provider error: the tally goes on from the failed attempts", async () => {
  stage().llm.addScenario("lost-then-limited", { turns: [{ text: "after the loss and the limits" }] });
  stage().llm.addFaults([
    // Attempt 1 waits on an answer that never comes, and its worker is killed meanwhile.
    { kind: "hang", match: { scenario: "lost-then-limited" }, times: 1 },
    { kind: "rate_limit", match: { scenario: "lost-then-limited" }, times: 2 },
  ]);
  const first = await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:lost-then-limited] go", mode: "auto" },
    stage().settings(),
  );
  const calls = () =>
    stage()
      .llm.journal()
      .filter((entry) => entry.scenario === "lost-then-limited");
  await eventually(async () => (calls().length === 1 ? true : undefined));
  await first.kill();
  await stage().startWorker();
  const events = (await collectRunStream(stage().client, runWorkflowId(ref))).map((item) => item.event);
  expect((await stage().result(ref)).status).toBe("completed");
  expect(calls()).toHaveLength(4);
  const retries = events.filter((event) => event.type === "retry");
  // Attempt 1 was lost (no event); attempts 2 and 3 were the call's first and second provider errors.
  expect(retries).toEqual([
    expect.objectContaining({ attempt: 2, providerErrors: 1, maxAttempts: 8 }),
    expect.objectContaining({ attempt: 3, providerErrors: 2, maxAttempts: 8 }),
  ]);
  const assistant = messagesOf(await expectIntactSession(stage(), ref)).filter((m) => m.role === "assistant");
  expect(assistant).toHaveLength(1);
});

test("an answer longer than the live budget streams a prefix, then a cut; the whole answer is stored", async () => {
  const long = Array.from({ length: 8_000 }, (_, i) => `word${i}`).join(" ");
  stage().llm.addScenario("live-cut", { turns: [{ text: long }] });
  await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:live-cut] go", mode: "auto" }, stage().settings());
  const events = (await collectRunStream(stage().client, runWorkflowId(ref))).map((item) => item.event);
  const entries = await expectIntactSession(stage(), ref);
  const assistant = entries.find(
    (entry) => entry.type === "message" && entry.message.role === "assistant",
  ) as { id: string; message: AssistantMessage };
  expect(textOf(assistant.message)).toBe(long);
  const streamed = rebuiltText(events, assistant.id);
  expect(long.startsWith(streamed)).toBe(true);
  expect(streamed.length).toBeGreaterThan(10_000);
  expect(streamed.length).toBeLessThanOrEqual(DEFAULT_LIVE_EVENT_OPTIONS.maxChars);
  const cuts = events.filter(
    (event) => event.type === "message_update" && event.assistantMessageEvent.type === "cut",
  );
  expect(cuts).toHaveLength(1);
});
