/**
 * Sub-agents through the real stack: a `task` call runs a child workflow on its own session and
 * its answer comes back as the call's result; children run in parallel, each on its share of the
 * parent's budgets; a failed child is an error result; an abort of the parent aborts the child.
 */

import { DEFAULT_RUN_SETTINGS, type RunSettings, runWorkflowId } from "../../../src/contracts/runs";
import { childSessionId } from "../../../src/core/agents";
import type { ToolResultMessage } from "../../../src/core/messages";
import { SessionNotFoundError } from "../../../src/store/session-errors";
import {
  eventually,
  expectIntactSession,
  messagesOf,
  modelCalled,
  runStageForSuite,
  toolCallIds,
} from "../../support/run-harness";

jest.setTimeout(120_000);

const stage = runStageForSuite();

/** A child's report longer than any preview (the result carries all of it). */
const LONG_REPORT = Array.from({ length: 60 }, (_, i) => `finding ${i}: ${"detail ".repeat(8).trim()}`).join(
  "\n",
);

const withTask = () => stage().settings({ tools: [...DEFAULT_RUN_SETTINGS.tools, "task"] });

function taskResults(messages: ReturnType<typeof messagesOf>): ToolResultMessage[] {
  return messages.filter(
    (message): message is ToolResultMessage => message.role === "toolResult" && message.toolName === "task",
  );
}

test("a task call runs the explore agent as a child run and returns its answer and usage", async () => {
  stage().llm.addScenario("sub-parent", {
    turns: [
      {
        toolCalls: [
          { name: "task", arguments: { agent: "explore", prompt: "[scenario:sub-child] list it" } },
        ],
      },
      { text: "Parent got: {{lastToolResult}}" },
    ],
  });
  stage().llm.addScenario("sub-child", {
    turns: [
      {
        toolCalls: [
          { name: "ls", arguments: {} },
          { name: "bash", arguments: { command: "echo hi" } },
        ],
      },
      { text: `The child looked around.\n${LONG_REPORT}` },
    ],
  });
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:sub-parent] delegate", mode: "auto" }, withTask());
  const result = await stage().result(ref);
  expect(result.status).toBe("completed");

  const messages = messagesOf(await stage().entries(ref));
  const [callId] = toolCallIds(messages);
  const childRef = { tenantId: ref.tenantId, sessionId: childSessionId(ref.sessionId, callId ?? "") };
  const [taskResult] = taskResults(messages);
  expect(taskResult?.isError).toBe(false);
  const text = taskResult?.content[0]?.type === "text" ? taskResult.content[0].text : "";
  // The whole answer, not a preview of it; the child's session and usage beside it.
  expect(text).toContain(`The child looked around.\n${LONG_REPORT}`);
  expect(text).toContain(`session ${childRef.sessionId}`);

  const child = await stage().result(childRef);
  expect(child.status).toBe("completed");
  expect(taskResult?.details).toEqual({
    agent: "explore",
    childSessionId: childRef.sessionId,
    status: "completed",
    usage: child.usage,
  });
  // The child's model calls count in the parent's usage.
  const parentOwn = messages.reduce(
    (sum, message) => sum + (message.role === "assistant" ? message.usage.totalTokens : 0),
    0,
  );
  expect(result.usage.totalTokens).toBe(parentOwn + child.usage.totalTokens);

  // The child is read-only: bash was refused, ls ran; its header names the parent.
  const childMessages = messagesOf(await stage().entries(childRef));
  const childResults = childMessages.filter((message) => message.role === "toolResult");
  expect(childResults.map((message) => [message.toolName, message.isError])).toEqual([
    ["ls", false],
    ["bash", true],
  ]);
  const refused = childResults[1];
  expect(refused?.role === "toolResult" && refused.content[0]).toEqual({
    type: "text",
    text: "Tool call refused: bash is not one of this agent's tools (read, grep, find, ls).",
  });
  const header = await stage().store.getHeader(childRef);
  expect(header.parentSession).toBe(ref.sessionId);
  // A child workflow of the parent's, in Temporal.
  const description = await stage().client.workflow.getHandle(runWorkflowId(childRef)).describe();
  expect(description.raw.workflowExecutionInfo?.parentExecution?.workflowId).toBe(runWorkflowId(ref));
});

test('an agent with workspace "fork" reads the parent\'s files at the call; its own edits stay in its session', async () => {
  stage().llm.addScenario("sub-fork-parent", {
    turns: [
      {
        toolCalls: [{ name: "write", arguments: { path: "notes/plan.txt", content: "parent wrote this\n" } }],
      },
      {
        toolCalls: [
          { name: "task", arguments: { agent: "writer", prompt: "[scenario:sub-fork-child] read the plan" } },
        ],
      },
      { toolCalls: [{ name: "ls", arguments: { path: "notes" } }] },
      { text: "Parent sees: {{lastToolResult}}" },
    ],
  });
  stage().llm.addScenario("sub-fork-child", {
    turns: [
      { toolCalls: [{ name: "read", arguments: { path: "notes/plan.txt" } }] },
      { toolCalls: [{ name: "write", arguments: { path: "notes/child.txt", content: "child\n" } }] },
      { text: "Child read: {{lastToolResult}}" },
    ],
  });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    agents: [{ name: "writer", description: "writes", tools: ["read", "write"], workspace: "fork" as const }],
  };
  await stage().runs.deliver(ref, { text: "[scenario:sub-fork-parent] go", mode: "auto" }, settings);
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await stage().entries(ref));
  const [callId] = toolCallIds(messages).slice(1);
  const childRef = { tenantId: ref.tenantId, sessionId: childSessionId(ref.sessionId, callId ?? "") };
  const childMessages = messagesOf(await stage().entries(childRef));
  const read = childMessages.find((message) => message.role === "toolResult" && message.toolName === "read");
  expect(read?.role === "toolResult" && read.content[0]).toEqual({
    type: "text",
    text: "parent wrote this",
  });
  // The fork is the child's: the parent's workspace does not get the child's file.
  const last = messages.at(-1);
  const listing = last?.role === "assistant" && last.content[0]?.type === "text" ? last.content[0].text : "";
  expect(listing).toContain("plan.txt");
  expect(listing).not.toContain("child.txt");
});

test("by default a child's edits (new, changed and removed files) are in the parent's workspace when the task returns", async () => {
  stage().llm.addScenario("sub-merge-parent", {
    turns: [
      {
        toolCalls: [
          { name: "write", arguments: { path: "notes/plan.txt", content: "parent wrote this\n" } },
          { name: "write", arguments: { path: "notes/old.txt", content: "to be removed\n" } },
        ],
      },
      {
        toolCalls: [
          {
            name: "task",
            arguments: { agent: "editor", prompt: "[scenario:sub-merge-child] edit the plan" },
          },
        ],
      },
      {
        toolCalls: [
          { name: "bash", arguments: { command: "ls notes; cat notes/plan.txt lib/util/helper.txt" } },
        ],
      },
      { text: "Parent sees: {{lastToolResult}}" },
    ],
  });
  stage().llm.addScenario("sub-merge-child", {
    turns: [
      {
        toolCalls: [
          { name: "edit", arguments: { path: "notes/plan.txt", oldText: "parent", newText: "child" } },
          { name: "write", arguments: { path: "notes/child.txt", content: "child\n" } },
          { name: "bash", arguments: { command: "rm notes/old.txt" } },
          // In folders the parent does not have.
          { name: "write", arguments: { path: "lib/util/helper.txt", content: "helper\n" } },
        ],
      },
      { text: "edited" },
    ],
  });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    agents: [{ name: "editor", description: "edits", tools: ["read", "write", "edit", "bash"] }],
  };
  await stage().runs.deliver(ref, { text: "[scenario:sub-merge-parent] go", mode: "auto" }, settings);
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const [task] = taskResults(messages);
  expect(task?.isError).toBe(false);
  const text = task?.content[0]?.type === "text" ? task.content[0].text : "";
  expect(text).toContain(
    "Its changes are in your workspace (6 paths: notes/old.txt, lib, lib/util, notes/child.txt, notes/plan.txt, lib/util/helper.txt).",
  );
  expect(task?.details).toMatchObject({ merge: { outcome: "applied", count: 6 } });
  const last = messages.at(-1);
  const seen = last?.role === "assistant" && last.content[0]?.type === "text" ? last.content[0].text : "";
  expect(seen).toContain("child.txt\nplan.txt\nchild wrote this\nhelper");
  expect(seen).not.toContain("old.txt");
});

test("a child whose edits a sibling call of the batch changed meanwhile: nothing of them is applied, and the result says so", async () => {
  stage().llm.addScenario("sub-clash-parent", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "plan.txt", content: "parent wrote this\n" } }] },
      {
        toolCalls: [
          {
            name: "task",
            arguments: { agent: "editor", prompt: "[scenario:sub-clash-child] edit the plan" },
          },
          { name: "bash", arguments: { command: "echo sibling > plan.txt" } },
        ],
      },
      { toolCalls: [{ name: "bash", arguments: { command: "cat plan.txt; ls" } }] },
      { text: "Parent sees: {{lastToolResult}}" },
    ],
  });
  stage().llm.addScenario("sub-clash-child", {
    turns: [
      // A turn first, so the sibling's bash has long changed the file when the child's edit lands.
      { toolCalls: [{ name: "bash", arguments: { command: "sleep 1" } }] },
      {
        toolCalls: [
          { name: "edit", arguments: { path: "plan.txt", oldText: "parent", newText: "child" } },
          { name: "write", arguments: { path: "extra.txt", content: "child\n" } },
        ],
      },
      { text: "edited" },
    ],
  });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    toolExecution: "parallel" as const,
    agents: [{ name: "editor", description: "edits", tools: ["read", "write", "edit", "bash"] }],
  };
  await stage().runs.deliver(ref, { text: "[scenario:sub-clash-parent] go", mode: "auto" }, settings);
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const [task] = taskResults(messages);
  expect(task?.isError).toBe(true);
  const text = task?.content[0]?.type === "text" ? task.content[0].text : "";
  expect(text).toContain(
    "Its changes were NOT applied to your workspace: another call of the same batch changed plan.txt meanwhile.",
  );
  const last = messages.at(-1);
  const seen = last?.role === "assistant" && last.content[0]?.type === "text" ? last.content[0].text : "";
  // The sibling's write stands, and not even the child's new file came over.
  expect(seen).toContain("sibling");
  expect(seen).not.toContain("extra.txt");
});

test("two task calls in one batch run in parallel; a failing child is an error result", async () => {
  stage().llm.addScenario("sub-two", {
    turns: [
      {
        toolCalls: [
          { name: "task", arguments: { agent: "explore", prompt: "[scenario:sub-slow] one" } },
          { name: "task", arguments: { agent: "explore", prompt: "[scenario:sub-slow] two" } },
          { name: "task", arguments: { agent: "broken", prompt: "fail please" } },
          { name: "task", arguments: { agent: "nobody", prompt: "who?" } },
        ],
      },
      { text: "done" },
    ],
  });
  stage().llm.addScenario("sub-slow", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "sleep 2" } }] }, { text: "slow done" }],
  });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    agents: [
      { name: "explore", description: "sleeps", tools: ["bash"] },
      { name: "broken", description: "fails", model: "no-such-model" },
    ],
  };
  const started = Date.now();
  await stage().runs.deliver(ref, { text: "[scenario:sub-two] fan out", mode: "auto" }, settings);
  const result = await stage().result(ref);
  expect(result.status).toBe("completed");
  const results = taskResults(messagesOf(await stage().entries(ref)));
  expect(results.map((message) => message.isError)).toEqual([false, false, true, true]);
  const texts = results.map((message) =>
    message.content[0]?.type === "text" ? message.content[0].text : "",
  );
  expect(texts[0]).toContain("slow done");
  expect(texts[2]).toContain("Agent broken failed");
  expect(texts[3]).toContain('Unknown agent "nobody"');
  // Two children sleeping 2 s each, in parallel: well under the 4 s one after the other needs.
  const children = await Promise.all(
    toolCallIds(messagesOf(await stage().entries(ref)))
      .slice(0, 2)
      .map(async (id) => {
        const handle = stage().client.workflow.getHandle(
          runWorkflowId({ tenantId: ref.tenantId, sessionId: childSessionId(ref.sessionId, id) }),
        );
        const info = await handle.describe();
        return { start: info.startTime.getTime(), close: info.closeTime?.getTime() ?? 0 };
      }),
  );
  const [a, b] = children;
  expect(a && b && a.start < b.close && b.start < a.close).toBe(true);
  expect(Date.now() - started).toBeGreaterThan(2_000);
  await expectIntactSession(stage(), ref);
  for (const index of [0, 1, 2]) await expectIntactSession(stage(), await childOf(ref, index));
});

test("abort of the parent aborts the child, and both sessions are closed", async () => {
  stage().llm.addScenario("sub-abort", {
    turns: [
      { toolCalls: [{ name: "task", arguments: { agent: "explore", prompt: "[scenario:sub-hung] x" } }] },
    ],
  });
  stage().llm.addScenario("sub-hung", { turns: [], after: { text: "never" } });
  stage().llm.addFaults([{ kind: "hang", match: { scenario: "sub-hung" } }]);
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:sub-abort] go", mode: "auto" }, withTask());
  await modelCalled(stage(), "sub-hung");
  expect(await stage().runs.signalAbort(ref, "stop all")).toBe("sent");
  const result = await stage().result(ref);
  expect(result).toMatchObject({ status: "aborted", reason: "stop all" });

  const messages = messagesOf(await stage().entries(ref));
  const [callId] = toolCallIds(messages);
  const childRef = { tenantId: ref.tenantId, sessionId: childSessionId(ref.sessionId, callId ?? "") };
  const child = await stage().result(childRef);
  expect(child.status).toBe("aborted");
  expect(child.reason).toContain("stop all");
  expect(taskResults(messages).map((message) => message.isError)).toEqual([true]);
  const childMessages = messagesOf(await expectIntactSession(stage(), childRef));
  expect(childMessages.at(-1)).toMatchObject({ role: "assistant", stopReason: "aborted" });
  await expectIntactSession(stage(), ref);
});

/** The child session of the run's `index`th tool call. */
async function childOf(ref: { tenantId: string; sessionId: string }, index = 0) {
  const id = toolCallIds(messagesOf(await stage().entries(ref)))[index] ?? "";
  return { tenantId: ref.tenantId, sessionId: childSessionId(ref.sessionId, id) };
}

test("a child stopped by its turn limit is an error result the parent's model reads", async () => {
  stage().llm.addScenario("sub-limit-parent", {
    turns: [
      { toolCalls: [{ name: "task", arguments: { agent: "looper", prompt: "[scenario:sub-loop] go on" } }] },
      { text: "Parent read: {{lastToolResult}}" },
    ],
  });
  stage().llm.addScenario("sub-loop", { turns: [], after: { toolCalls: [{ name: "ls", arguments: {} }] } });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    agents: [{ name: "looper", description: "never stops", tools: ["ls"], maxTurns: 2 }],
  };
  await stage().runs.deliver(ref, { text: "[scenario:sub-limit-parent] go", mode: "auto" }, settings);
  expect((await stage().result(ref)).status).toBe("completed");
  const childRef = await childOf(ref);
  expect(await stage().result(childRef)).toMatchObject({
    status: "completed",
    reason: "turn limit reached (2)",
    cutShort: true,
  });
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const [result] = taskResults(messages);
  expect(result).toMatchObject({ isError: true, details: { cutShort: true, status: "completed" } });
  const last = messages.at(-1);
  const read = last?.role === "assistant" && last.content[0]?.type === "text" ? last.content[0].text : "";
  expect(read).toContain("Agent looper stopped before finishing: turn limit reached (2)");
  await expectIntactSession(stage(), childRef);
});

test("the parent's turn limit counts its children's turns: a child gets the turns left, then the parent stops", async () => {
  stage().llm.addScenario("sub-turns-parent", {
    turns: [
      {
        toolCalls: [
          { name: "task", arguments: { agent: "looper", prompt: "[scenario:sub-turns-loop] go on" } },
        ],
      },
    ],
    after: { text: "the parent went on" },
  });
  stage().llm.addScenario("sub-turns-loop", {
    turns: [],
    after: { toolCalls: [{ name: "ls", arguments: {} }] },
  });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    agents: [{ name: "looper", description: "never stops", tools: ["ls"], maxTurns: 10 }],
    limits: { ...withTask().limits, maxTurns: 3 },
  };
  await stage().runs.deliver(ref, { text: "[scenario:sub-turns-parent] go", mode: "auto" }, settings);
  const result = await stage().result(ref);
  const childRef = await childOf(ref);
  // The parent took one turn (the task call): the child had the other two of its three.
  expect(await stage().result(childRef)).toMatchObject({
    status: "completed",
    reason: "turn limit reached (2)",
    turns: 2,
    cutShort: true,
  });
  expect(result).toMatchObject({
    status: "completed",
    reason: "turn limit reached (3, 2 of them its sub-agents')",
    turns: 1,
  });
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult"]);
  await expectIntactSession(stage(), childRef);
});

test("sub-agents nest: a child that names task delegates in turn; the deepest level is offered no task", async () => {
  stage().llm.addScenario("nest-root", {
    turns: [
      {
        toolCalls: [{ name: "task", arguments: { agent: "lead", prompt: "[scenario:nest-lead] split it" } }],
      },
      { text: "root read: {{lastToolResult}}" },
    ],
  });
  stage().llm.addScenario("nest-lead", {
    turns: [
      { toolCalls: [{ name: "task", arguments: { agent: "lead", prompt: "[scenario:nest-leaf] look" } }] },
      { text: "lead read: {{lastToolResult}}" },
    ],
  });
  // At the deepest level the model still tries to delegate: the call is refused, not run.
  stage().llm.addScenario("nest-leaf", {
    turns: [
      { toolCalls: [{ name: "task", arguments: { agent: "lead", prompt: "[scenario:nest-leaf] deeper" } }] },
      { text: "leaf done" },
    ],
  });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    agents: [{ name: "lead", description: "splits work", tools: ["ls", "task"] }],
  };
  await stage().runs.deliver(ref, { text: "[scenario:nest-root] go", mode: "auto" }, settings);
  const root = await stage().result(ref);
  expect(root).toMatchObject({ status: "completed", reason: "the agent finished" });
  const childRef = await childOf(ref);
  const grandchildRef = await childOf(childRef);
  const child = await stage().result(childRef);
  const grandchild = await stage().result(grandchildRef);
  expect(child).toMatchObject({ status: "completed", turns: 2, subAgentTurns: 2 });
  expect(grandchild).toMatchObject({ status: "completed", turns: 2 });
  expect(grandchild.subAgentTurns).toBeUndefined();
  // The leaf's own task call was refused: an error result, and no great-grandchild session.
  const leafMessages = messagesOf(await expectIntactSession(stage(), grandchildRef));
  expect(taskResults(leafMessages)[0]).toMatchObject({ isError: true });
  await expect(stage().entries(await childOf(grandchildRef))).rejects.toThrow(SessionNotFoundError);
  // Answers travel up, and so does the usage of the whole tree.
  const rootMessages = messagesOf(await expectIntactSession(stage(), ref));
  expect(taskResults(rootMessages)[0]?.isError).toBe(false);
  const last = rootMessages.at(-1);
  const read = last?.role === "assistant" && last.content[0]?.type === "text" ? last.content[0].text : "";
  expect(read).toContain("lead read:");
  const own = rootMessages.reduce(
    (sum, message) => sum + (message.role === "assistant" ? message.usage.totalTokens : 0),
    0,
  );
  expect(root.usage.totalTokens).toBe(own + child.usage.totalTokens);
  expect(child.usage.totalTokens).toBeGreaterThan(grandchild.usage.totalTokens);
  // The root counts its children's and grandchildren's turns against its limit.
  expect(root.subAgentTurns).toBe(4);
  await expectIntactSession(stage(), childRef);
});

test("the parent's cost budget counts its children: a child stops at what is left, then the parent", async () => {
  stage().llm.addScenario("sub-budget-parent", {
    turns: [
      { toolCalls: [{ name: "task", arguments: { agent: "looper", prompt: "[scenario:sub-spend] go on" } }] },
    ],
    after: { text: "the parent went on" },
  });
  stage().llm.addScenario("sub-spend", { turns: [], after: { toolCalls: [{ name: "ls", arguments: {} }] } });
  const ref = stage().newSession();
  const budget = 0.003;
  const settings = {
    ...withTask(),
    agents: [{ name: "looper", description: "spends", tools: ["ls"] }],
    // Over its budget the parent pauses at the turn boundary (a task result is owed to the model);
    // nobody raises it here, so the pause ends the run after a second.
    limits: { ...withTask().limits, maxCostUsd: budget, pauseTimeoutSeconds: 1 },
  };
  await stage().runs.deliver(ref, { text: "[scenario:sub-budget-parent] go", mode: "auto" }, settings);
  const result = await stage().result(ref);
  const childRef = await childOf(ref);
  const child = await stage().result(childRef);
  expect(child).toMatchObject({ status: "completed", cutShort: true });
  expect(child.reason).toMatch(/^cost budget reached/);
  // The child had a turn or more before its share ran out, and ran well short of its turn limit.
  expect(child.turns).toBeGreaterThan(1);
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const parentOwn = messages.reduce(
    (sum, message) => sum + (message.role === "assistant" ? message.usage.cost.total : 0),
    0,
  );
  expect(result.usage.cost.total).toBeCloseTo(parentOwn + child.usage.cost.total, 10);
  // Its children's spending used up the parent's budget: it stops (paused, then timed out) without
  // another model call.
  expect(result.status).toBe("completed");
  expect(result.reason).toMatch(/^cost budget reached .*paused for 1 s without a raise or a resume$/);
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult"]);
  expect(taskResults(messages)[0]).toMatchObject({ isError: true });
  await expectIntactSession(stage(), childRef);
});

/**
 * Every model call of the budget tests reports this usage: 10,000 input tokens at local-chat's
 * $1 per million, so $0.01 and 10,000 tokens a call.
 */
const CALL_USAGE = { input: 10_000, output: 0, cacheRead: 0, cacheWrite: 0 };
const CALL_USD = 0.01;
const CALL_TOKENS = 10_000;

/**
 * A parent whose first turn makes three parallel `task` calls to an agent that lists the
 * workspace until a limit stops it; every call costs `CALL_USAGE`. Returns the parent's result,
 * its messages and its three children's results, every session checked whole and closed.
 */
async function threeSpendingChildren(name: string, limits: Partial<RunSettings["limits"]>) {
  stage().llm.addScenario(`${name}-parent`, {
    turns: [
      {
        toolCalls: ["one", "two", "three"].map((which) => ({
          name: "task",
          arguments: { agent: "spender", prompt: `[scenario:${name}-child] ${which}` },
        })),
        usage: CALL_USAGE,
      },
    ],
    after: { text: "the parent went on", usage: CALL_USAGE },
  });
  stage().llm.addScenario(`${name}-child`, {
    turns: [],
    after: { toolCalls: [{ name: "ls", arguments: {} }], usage: CALL_USAGE },
  });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    toolExecution: "parallel" as const,
    agents: [{ name: "spender", description: "spends", tools: ["ls"] }],
    // Over its budget the parent pauses at the turn boundary; nobody raises it, so it ends after 1 s.
    limits: { ...withTask().limits, pauseTimeoutSeconds: 1, ...limits },
  };
  await stage().runs.deliver(ref, { text: `[scenario:${name}-parent] fan out`, mode: "auto" }, settings);
  const result = await stage().result(ref);
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const children = await Promise.all(
    [0, 1, 2].map(async (index) => {
      const childRef = await childOf(ref, index);
      const childMessages = messagesOf(await expectIntactSession(stage(), childRef));
      return { result: await stage().result(childRef), messages: childMessages };
    }),
  );
  // The usage every bound below is stated in: each model call of the tree reported CALL_USAGE.
  const calls = [messages, ...children.map((child) => child.messages)]
    .flat()
    .flatMap((message) => (message.role === "assistant" ? [message.usage] : []));
  expect(calls.map((usage) => usage.totalTokens)).toEqual(calls.map(() => CALL_TOKENS));
  for (const usage of calls) expect(usage.cost.total).toBeCloseTo(CALL_USD, 12);
  return { result, messages, children: children.map((child) => child.result) };
}

/** The limit a child's run ended at, from its reason (`cost budget reached ($0.0333…)`). */
function limitOf(reason: string): number {
  const limit = /^(?:cost|token) budget reached \(\$?([0-9.e-]+)\)$/.exec(reason)?.[1];
  if (limit === undefined) throw new Error(`not a budget reached: ${reason}`);
  return Number(limit);
}

test("parallel children share the parent's cost budget: the tree spends at most it plus one model call per run", async () => {
  const budget = 0.11;
  const { result, messages, children } = await threeSpendingChildren("share-cost", { maxCostUsd: budget });
  // The parent's usage holds its children's: 1 + 3 × 4 calls.
  const parentOwn = messages.reduce(
    (sum, message) => sum + (message.role === "assistant" ? message.usage.cost.total : 0),
    0,
  );
  const tree = parentOwn + children.reduce((sum, child) => sum + child.usage.cost.total, 0);
  expect(result.usage.cost.total).toBeCloseTo(tree, 12);
  // The bound: the budget, plus one call by which each of the 4 runs crossed its own.
  expect(result.usage.cost.total).toBeLessThanOrEqual(budget + 4 * CALL_USD);
  expect(result.usage.cost.total).toBeCloseTo(13 * CALL_USD, 12);
  // The parent's first call left $0.10: three children started together got a third each.
  for (const child of children) {
    expect(child).toMatchObject({ status: "completed", cutShort: true });
    expect(limitOf(child.reason)).toBeCloseTo((budget - CALL_USD) / 3, 12);
    // A child ends after the call that crosses its share: 4 calls of $0.01 for $0.0333.
    expect(child.turns).toBe(4);
    expect(child.usage.cost.total).toBeLessThanOrEqual(limitOf(child.reason) + CALL_USD);
  }
  expect(result.reason).toMatch(/^cost budget reached .*paused for 1 s without a raise or a resume$/);
  expect(taskResults(messages).map((message) => message.isError)).toEqual([true, true, true]);
});

test("parallel children share the parent's token budget, not each the whole of it", async () => {
  const budget = 85_000;
  const { result, messages, children } = await threeSpendingChildren("share-tokens", { maxTokens: budget });
  const parentOwn = messages.reduce(
    (sum, message) => sum + (message.role === "assistant" ? message.usage.totalTokens : 0),
    0,
  );
  expect(result.usage.totalTokens).toBe(
    parentOwn + children.reduce((sum, child) => sum + child.usage.totalTokens, 0),
  );
  // The bound: the budget, plus one call by which each of the 4 runs crossed its own.
  expect(result.usage.totalTokens).toBeLessThanOrEqual(budget + 4 * CALL_TOKENS);
  expect(result.usage.totalTokens).toBe(10 * CALL_TOKENS);
  // 75,000 tokens left after the parent's first call: 25,000 each, crossed by the third call.
  expect(children.map((child) => limitOf(child.reason))).toEqual([25_000, 25_000, 25_000]);
  for (const child of children) {
    expect(child).toMatchObject({ status: "completed", cutShort: true, turns: 3 });
    expect(child.usage.totalTokens).toBeLessThanOrEqual(25_000 + CALL_TOKENS);
  }
  expect(result.reason).toMatch(/^token budget reached .*paused for 1 s without a raise or a resume$/);
});

test("parallel children share the parent's turns left; a call with none left starts no child", async () => {
  stage().llm.addScenario("share-turns-parent", {
    turns: [
      {
        toolCalls: ["one", "two", "three"].map((which) => ({
          name: "task",
          arguments: { agent: "looper", prompt: `[scenario:share-turns-child] ${which}` },
        })),
      },
    ],
    after: { text: "the parent went on" },
  });
  stage().llm.addScenario("share-turns-child", {
    turns: [],
    after: { toolCalls: [{ name: "ls", arguments: {} }] },
  });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    toolExecution: "parallel" as const,
    agents: [{ name: "looper", description: "never stops", tools: ["ls"], maxTurns: 10 }],
    limits: { ...withTask().limits, maxTurns: 3 },
  };
  await stage().runs.deliver(ref, { text: "[scenario:share-turns-parent] go", mode: "auto" }, settings);
  const result = await stage().result(ref);
  // Two turns left after the parent's first: one each for the first two calls, none for the third.
  for (const index of [0, 1]) {
    const childRef = await childOf(ref, index);
    expect(await stage().result(childRef)).toMatchObject({
      status: "completed",
      reason: "turn limit reached (1)",
      turns: 1,
    });
    await expectIntactSession(stage(), childRef);
  }
  await expect(stage().entries(await childOf(ref, 2))).rejects.toThrow(SessionNotFoundError);
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const results = taskResults(messages);
  expect(results.map((message) => message.isError)).toEqual([true, true, true]);
  expect(results[2]?.content[0]).toEqual({
    type: "text",
    text: "task not started: this run has no turns left to give a sub-agent (its limit of 3 turns counts its sub-agents' turns, those of sub-agents still running included)",
  });
  expect(result).toMatchObject({
    status: "completed",
    reason: "turn limit reached (3, 2 of them its sub-agents')",
    turns: 1,
    subAgentTurns: 2,
  });
});

test("a child's tool call awaiting approval is approved on the child's session; the parent gets the answer", async () => {
  stage().llm.addScenario("sub-ask-parent", {
    turns: [
      { toolCalls: [{ name: "task", arguments: { agent: "shell", prompt: "[scenario:sub-ask] run it" } }] },
      { text: "Parent read: {{lastToolResult}}" },
    ],
  });
  stage().llm.addScenario("sub-ask", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo approved-run" } }] }],
    after: { text: "Child saw: {{lastToolResult}}" },
  });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    agents: [{ name: "shell", description: "runs commands", tools: ["bash"] }],
    policy: {
      rules: [{ tool: "bash", action: "ask" as const }],
      default: "allow" as const,
      approvalTimeoutMs: 60_000,
    },
  };
  await stage().runs.deliver(ref, { text: "[scenario:sub-ask-parent] go", mode: "auto" }, settings);
  const childRef = await eventually(async () => {
    // The session is created by the run's first activity: until then there is nothing to read.
    const entries = await stage()
      .entries(ref)
      .catch((error: unknown) => {
        if (error instanceof SessionNotFoundError) return [];
        throw error;
      });
    const ids = toolCallIds(messagesOf(entries));
    return ids[0] ? { tenantId: ref.tenantId, sessionId: childSessionId(ref.sessionId, ids[0]) } : undefined;
  });
  const waiting = await eventually(async () => {
    const state = await stage()
      .runs.state(childRef)
      .catch(() => undefined);
    return state?.pendingToolCalls.find((call) => call.state === "awaiting_approval");
  });
  expect(waiting.name).toBe("bash");
  expect(await stage().runs.approve(childRef, { toolCallId: waiting.toolCallId, decision: "approve" })).toBe(
    "sent",
  );
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const [result] = taskResults(messages);
  expect(result?.isError).toBe(false);
  expect(result?.content[0]?.type === "text" && result.content[0].text).toContain("approved-run");
  await expectIntactSession(stage(), childRef);
});
