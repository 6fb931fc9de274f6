/**
 * Faults in combination: an abort while the in-flight activity's worker is dead, a session left
 * with a gap or open calls by a run that died badly, a run whose activity fails for good, a worker
 * killed while it claims the workspace. Whatever happens, the run ends in a state that says what
 * happened and the stored session stays whole and usable.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sessionCwd } from "../../../src/contracts/runs";
import { FAILED_MARKER, UNFINISHED_TOOL_RESULT_TEXT } from "../../../src/core/markers";
import type { AgentMessage } from "../../../src/core/messages";
import { createMessageEntry, createSessionHeader } from "../../../src/core/session-entries";
import { workspaceFor } from "../../../src/tools/workspace";
import {
  eventually,
  expectIntactSession,
  messagesOf,
  modelCalled,
  runStageForSuite,
} from "../../support/run-harness";

const stage = runStageForSuite({ workersPerTest: true });

/** The session accepts a new message and answers it; the stored session stays whole. */
async function expectUsable(ref: { tenantId: string; sessionId: string }) {
  await stage().runs.deliver(ref, { text: "are you there?", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  expect(messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

test("abort while the tool's worker is dead: the run ends aborted and every call has its result", async () => {
  stage().llm.addScenario("abort-dead-tool", {
    turns: [
      {
        toolCalls: [
          { name: "bash", arguments: { command: "echo started >> steps.log; sleep 30" } },
          { name: "ls", arguments: {} },
        ],
      },
    ],
    after: { text: "You said: {{lastUser}}" },
  });
  const first = await stage().startWorker();
  const ref = stage().newSession();
  const log = join(workspaceFor(stage().workspaceRoot, ref.tenantId, ref.sessionId).dir, "steps.log");
  await stage().runs.deliver(
    ref,
    { text: "[scenario:abort-dead-tool] go", mode: "auto" },
    stage().settings(),
  );
  await eventually(async () => (readFileSafe(log).includes("started") ? true : undefined));
  await first.kill();
  // The abort goes the way the API sends it: no worker answers the update, so it is recorded as
  // the signal while no worker runs the activity; the next worker handles it.
  expect(await stage().runs.abort(ref, { reason: "stop now" })).toMatchObject({ kind: "signalled" });
  await stage().startWorker();
  const result = await stage().result(ref);
  expect(result).toMatchObject({ status: "aborted", reason: "stop now" });
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult", "toolResult"]);
  const events = await stage().runs.events(ref, 0);
  expect(events.at(-1)).toMatchObject({ type: "agent_end", status: "aborted" });
  await expectUsable(ref);
});

test("abort while the model call's worker is dead: the run ends aborted with the turn closed", async () => {
  stage().llm.addScenario("abort-dead-llm", { turns: [], after: { text: "You said: {{lastUser}}" } });
  stage().llm.addFaults([
    { kind: "slow", match: { scenario: "abort-dead-llm", turn: 0 }, rate: 1, latencyMs: 30_000 },
  ]);
  const first = await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:abort-dead-llm] hi", mode: "auto" }, stage().settings());
  await modelCalled(stage(), "abort-dead-llm");
  await first.kill();
  await stage().runs.signalAbort(ref, "changed my mind");
  await stage().startWorker();
  expect((await stage().result(ref)).status).toBe("aborted");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant"]);
  expect(messages[1]).toMatchObject({ stopReason: "aborted" });
  await expectUsable(ref);
});

describe("a session an earlier run left broken is repaired when the next run opens it", () => {
  beforeEach(async () => {
    await stage().startWorker();
  });

  /** Stores a session as a run that died badly left it: `entries` at their seqs, ids chained. */
  async function storeBroken(messages: Array<AgentMessage | "gap">) {
    const ref = stage().newSession();
    await stage().store.createSession(
      ref,
      createSessionHeader(ref.sessionId, new Date().toISOString(), sessionCwd(ref)),
    );
    let parentId: string | null = null;
    for (const [seq, message] of messages.entries()) {
      const id = `e${seq}${ref.sessionId.slice(-6)}`;
      if (message !== "gap") {
        await stage().store.putEntry(
          ref,
          seq,
          createMessageEntry({ id, parentId, timestamp: new Date().toISOString() }, message),
        );
      }
      parentId = id;
    }
    return ref;
  }

  const now = Date.now();
  const user = (text: string): AgentMessage => ({ role: "user", content: text, timestamp: now });
  const assistantWithCalls = (ids: string[]): AgentMessage => ({
    role: "assistant",
    content: ids.map((id) => ({
      type: "toolCall" as const,
      id,
      name: "bash",
      arguments: { command: "true" },
    })),
    api: "openai-completions",
    provider: "openai",
    model: "local-chat",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "toolUse",
    timestamp: now,
  });
  const result = (id: string): AgentMessage => ({
    role: "toolResult",
    toolCallId: id,
    toolName: "bash",
    content: [{ type: "text", text: "ok" }],
    isError: false,
    timestamp: now,
  });

  test("a gap left by a failed parallel batch is filled with the missing result", async () => {
    const ref = await storeBroken([
      user("go"),
      assistantWithCalls(["call_a", "call_b"]),
      "gap",
      result("call_b"),
    ]);
    await expectUsable(ref);
    const messages = messagesOf(await stage().entries(ref));
    expect(messages[2]).toMatchObject({
      role: "toolResult",
      toolCallId: "call_a",
      isError: true,
      content: [{ type: "text", text: UNFINISHED_TOOL_RESULT_TEXT }],
    });
    expect(messages[3]).toMatchObject({ role: "toolResult", toolCallId: "call_b", isError: false });
  });

  test("calls without results and an unanswered prompt at the end are closed", async () => {
    const calls = await storeBroken([user("go"), assistantWithCalls(["call_x", "call_y"]), result("call_x")]);
    await expectUsable(calls);
    expect(messagesOf(await stage().entries(calls))[3]).toMatchObject({
      toolCallId: "call_y",
      isError: true,
    });

    const prompt = await storeBroken([user("first prompt, never answered")]);
    await expectUsable(prompt);
    const messages = messagesOf(await stage().entries(prompt));
    expect(messages[1]).toMatchObject({ role: "assistant", stopReason: "error" });
  });
});

test("a model call that fails for good ends the run as failed, and the session records why", async () => {
  await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "hello", mode: "auto" },
    stage().settings({ model: "no-such-model" }),
  );
  const result = await stage().result(ref);
  expect(result.status).toBe("failed");
  expect(result.reason).toMatch(/UnknownModel/);
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant"]);
  expect(messages[1]).toMatchObject({ stopReason: "error", errorMessage: result.reason });
  const text = messages[1]?.role === "assistant" ? messages[1].content[0] : undefined;
  expect(text).toMatchObject({ type: "text", text: `${FAILED_MARKER} ${result.reason}` });
  const events = await stage().runs.events(ref, 0);
  expect(events.at(-1)).toMatchObject({ type: "agent_end", status: "failed", reason: result.reason });
  expect((await stage().runs.state(ref))?.status).toBe("failed");
  await expectUsable(ref);
});

test("an abort hands back the messages the run had queued and never read", async () => {
  await stage().startWorker();
  stage().llm.addScenario("abort-queued", { turns: [], after: { text: "You said: {{lastUser}}" } });
  stage().llm.addFaults([{ kind: "slow", match: { scenario: "abort-queued" }, rate: 1, latencyMs: 20_000 }]);
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:abort-queued] one", mode: "auto" }, stage().settings());
  // The first turn has taken its input and waits for the model: later messages are queued.
  await modelCalled(stage(), "abort-queued");
  await stage().runs.deliver(ref, { text: "steer me", mode: "steer" }, stage().settings());
  await stage().runs.deliver(ref, { text: "then this", mode: "followUp" }, stage().settings());
  await stage().runs.signalAbort(ref, "enough");
  const result = await stage().result(ref);
  expect(result.status).toBe("aborted");
  expect(result.unprocessed?.map((message) => message.text)).toEqual(["steer me", "then this"]);
  const events = await stage().runs.events(ref, 0);
  expect(events.at(-1)).toMatchObject({ type: "agent_end", unprocessed: ["steer me", "then this"] });
  await expectIntactSession(stage(), ref);
});

test("a worker killed while it claims the workspace costs seconds, not minutes", async () => {
  stage().llm.addScenario("claim-kill", {
    turns: [
      {
        toolCalls: [
          { name: "ls", arguments: {} },
          { name: "find", arguments: { pattern: "*" } },
        ],
      },
    ],
    after: { text: "listed" },
  });
  const first = await stage().startWorker({ KEEL_FAILPOINTS: "claimWorkspace.start" });
  const ref = stage().newSession();
  const started = Date.now();
  await stage().runs.deliver(ref, { text: "[scenario:claim-kill] list", mode: "auto" }, stage().settings());
  await first.exited();
  await stage().startWorker();
  expect((await stage().result(ref)).status).toBe("completed");
  // The claim heartbeats (10 s timeout); without it the run waited out a 5-minute timeout.
  expect(Date.now() - started).toBeLessThan(90_000);
  await expectIntactSession(stage(), ref);
  // Both parallel calls shared one claim: one claimWorkspace per attempt, not one per call.
  const history = await stage()
    .client.workflow.getHandle(`keel-run/${ref.tenantId}/${ref.sessionId}`)
    .fetchHistory();
  const claims = (history.events ?? []).filter(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === "claimWorkspace",
  );
  expect(claims).toHaveLength(1);
}, 150_000);

test("a delivery retried with the same delivery id after a continue-as-new is answered, not applied again", async () => {
  await stage().startWorker();
  stage().llm.addScenario("retry-after-can", {
    turns: [
      { toolCalls: [{ name: "ls", arguments: {} }] },
      { toolCalls: [{ name: "ls", arguments: {} }] },
      { toolCalls: [{ name: "bash", arguments: { command: "sleep 8" } }] },
    ],
    after: { text: "done" },
  });
  const ref = stage().newSession();
  const settings = stage().settings({ limits: { ...stage().settings().limits, turnsPerExecution: 1 } });
  await stage().runs.deliver(ref, { text: "[scenario:retry-after-can] go", mode: "auto" }, settings);
  const first = await stage().runs.deliver(ref, { text: "steer once", mode: "steer" }, settings, {
    deliveryId: "client-key-1",
  });
  const handle = stage().client.workflow.getHandle(`keel-run/${ref.tenantId}/${ref.sessionId}`);
  // Wait until the run has continued as new at least once after the steer.
  await eventually(async () => {
    const description = await handle.describe();
    return description.runId !== first.runId ? true : undefined;
  });
  const retried = await stage().runs.deliver(ref, { text: "steer once", mode: "steer" }, settings, {
    deliveryId: "client-key-1",
  });
  expect(retried.delivery).toBe(first.delivery);
  expect((await stage().result(ref)).status).toBe("completed");
  const stored = JSON.stringify(messagesOf(await expectIntactSession(stage(), ref)));
  expect(stored.split("steer once")).toHaveLength(2);
}, 120_000);
