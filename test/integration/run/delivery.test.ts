import { setTimeout as sleep } from "node:timers/promises";
import { INTERRUPTED_MARKER } from "../../../src/core/markers";
import { convertToLlm } from "../../../src/core/messages";
import { checkInvariants } from "../../../src/core/sanitize";
import { DeliveryRefusedError } from "../../../src/run-client/delivery";
import {
  eventually,
  messagesOf,
  modelCalled,
  runStageForSuite,
  slowEchoScenario,
  toolCallRunning,
} from "../../support/run-harness";

const stage = runStageForSuite();

function texts(messages: ReturnType<typeof messagesOf>): string[] {
  return messages.map((message) => {
    if (message.role === "user") return `user: ${typeof message.content === "string" ? message.content : ""}`;
    if (message.role === "assistant") {
      const text = message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
      const calls = message.content.filter((block) => block.type === "toolCall").length;
      return `assistant: ${text}${calls ? ` [${calls} calls]` : ""}`;
    }
    return `${message.role}`;
  });
}

test("steering during a tool batch: the batch finishes and the steering text opens the next turn", async () => {
  stage().llm.addScenario("steer-batch", {
    turns: [
      {
        toolCalls: [
          { name: "bash", arguments: { command: "sleep 1.5; echo slow-done" } },
          { name: "bash", arguments: { command: "echo quick-done" } },
        ],
      },
    ],
    after: { text: "You said: {{lastUser}}" },
  });
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:steer-batch] run both", mode: "auto" },
    stage().settings(),
  );
  await toolCallRunning(stage(), ref);
  const steered = await stage().runs.deliver(
    ref,
    { text: "use TypeScript", mode: "steer" },
    stage().settings(),
  );
  expect(steered.delivery).toBe("steered");
  expect((await stage().result(ref)).status).toBe("completed");
  expect(texts(messagesOf(await stage().entries(ref)))).toEqual([
    "user: [scenario:steer-batch] run both",
    "assistant:  [2 calls]",
    "toolResult",
    "toolResult",
    "user: use TypeScript",
    "assistant: You said: use TypeScript",
  ]);
  const results = messagesOf(await stage().entries(ref)).filter((message) => message.role === "toolResult");
  expect(results.map((result) => result.role === "toolResult" && result.isError)).toEqual([false, false]);
});

test("a follow-up waits until the agent would stop, then runs", async () => {
  slowEchoScenario(stage(), "slow-followup", 1_500);
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:slow-followup] first", mode: "auto" },
    stage().settings(),
  );
  const queued = await stage().runs.deliver(ref, { text: "second", mode: "followUp" }, stage().settings());
  expect(queued.delivery).toBe("queued");
  expect((await stage().result(ref)).status).toBe("completed");
  expect(texts(messagesOf(await stage().entries(ref)))).toEqual([
    "user: [scenario:slow-followup] first",
    "assistant: You said: first",
    "user: second",
    "assistant: You said: second",
  ]);
});

test("interrupt cancels the model call, keeps a marked partial answer and continues with the message", async () => {
  slowEchoScenario(stage(), "slow-interrupt", 4_000);
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:slow-interrupt] long task", mode: "auto" },
    stage().settings(),
  );
  await modelCalled(stage(), "slow-interrupt");
  const interrupted = await stage().runs.deliver(
    ref,
    { text: "change of plan", mode: "interrupt" },
    stage().settings(),
  );
  expect(interrupted.delivery).toBe("interrupted");
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await stage().entries(ref));
  expect(texts(messages)).toEqual([
    "user: [scenario:slow-interrupt] long task",
    `assistant: ${INTERRUPTED_MARKER}`,
    "user: change of plan",
    "assistant: You said: change of plan",
  ]);
  expect(messages[1]?.role === "assistant" && messages[1].stopReason).toBe("aborted");
  expect(checkInvariants(convertToLlm(messages))).toEqual([]);
});

test("reject refuses a message while the session is busy, and the run is unaffected", async () => {
  slowEchoScenario(stage(), "slow-reject", 1_500);
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:slow-reject] busy work", mode: "reject" },
    stage().settings(),
  );
  const refused = stage().runs.deliver(ref, { text: "me too", mode: "reject" }, stage().settings());
  await expect(refused).rejects.toBeInstanceOf(DeliveryRefusedError);
  await expect(refused).rejects.toMatchObject({ type: "RunBusy" });
  expect((await stage().result(ref)).status).toBe("completed");
  expect(texts(messagesOf(await stage().entries(ref)))).toEqual([
    "user: [scenario:slow-reject] busy work",
    "assistant: You said: busy work",
  ]);
});

test("a full steering queue refuses with QueueFull instead of dropping", async () => {
  slowEchoScenario(stage(), "slow-queue", 2_000);
  const ref = stage().newSession();
  const settings = stage().settings({ queueLimit: 2 });
  await stage().runs.deliver(ref, { text: "[scenario:slow-queue] start", mode: "auto" }, settings);
  // Once the model is working, nothing is drained from the queue until its answer is in.
  await modelCalled(stage(), "slow-queue");
  await stage().runs.deliver(ref, { text: "one", mode: "steer" }, settings);
  await stage().runs.deliver(ref, { text: "two", mode: "steer" }, settings);
  await expect(stage().runs.deliver(ref, { text: "three", mode: "steer" }, settings)).rejects.toMatchObject({
    type: "QueueFull",
  });
  expect((await stage().result(ref)).status).toBe("completed");
  const userTexts = texts(messagesOf(await stage().entries(ref))).filter((line) => line.startsWith("user"));
  expect(userTexts).toEqual(["user: [scenario:slow-queue] start", "user: one", "user: two"]);
});

test("a message sent after a run completed starts a new run on the same session", async () => {
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "round one", mode: "auto" }, stage().settings());
  await stage().result(ref);
  const again = await stage().runs.deliver(ref, { text: "round two", mode: "auto" }, stage().settings());
  expect(again.delivery).toBe("started");
  expect((await stage().result(ref)).status).toBe("completed");
  expect(texts(messagesOf(await stage().entries(ref)))).toEqual([
    "user: round one",
    "assistant: You said: round one",
    "user: round two",
    "assistant: You said: round two",
  ]);
});

test("messages sent around a run's completion are all delivered, to that run or to a new one", async () => {
  slowEchoScenario(stage(), "racing", 250);
  const ref = stage().newSession();
  const texts = Array.from({ length: 12 }, (_, i) => `message ${i}`);
  const outcomes: string[] = [];
  await stage().runs.deliver(ref, { text: "[scenario:racing] start", mode: "auto" }, stage().settings());
  for (const text of texts) {
    // Bursts and pauses: some messages land in a live run, some just after it completed.
    await sleep(outcomes.length % 3 === 2 ? 2_500 : 30 + Math.floor(Math.random() * 150));
    outcomes.push((await stage().runs.deliver(ref, { text, mode: "auto" }, stage().settings())).delivery);
  }
  await eventually(async () => {
    const state = await stage().runs.state(ref);
    return state && ["completed", "aborted", "failed"].includes(state.status) ? true : undefined;
  });
  const stored = messagesOf(await stage().entries(ref)).flatMap((message) =>
    message.role === "user" && typeof message.content === "string" ? [message.content] : [],
  );
  for (const text of texts) expect(stored).toContain(text);
  // The race really happened: some messages steered a live run, some started a new one.
  expect(outcomes).toContain("steered");
  expect(outcomes).toContain("started");
});
