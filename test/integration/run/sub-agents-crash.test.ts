/**
 * Sub-agents when workers die: the child's workflow id derives from the parent's tool call, so a
 * worker killed mid-child or while a parent waits for its children never starts a child twice; the
 * child resumes on the next worker and the parent gets its answer. Each test kills the worker that
 * holds the parent and its children (the stage's workers all serve one task queue) and checks both
 * sessions' invariants at the end.
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_RUN_SETTINGS, runWorkflowId } from "../../../src/contracts/runs";
import { childSessionId } from "../../../src/core/agents";
import type { ToolResultMessage } from "../../../src/core/messages";
import { testTmpDir } from "../../support/integration-env";
import { expectIntactSession, messagesOf, modelCalled, runStageForSuite } from "../../support/run-harness";

jest.setTimeout(180_000);

// Each test starts its workers (and kills some): the stage starts none.
const stage = runStageForSuite({ workersPerTest: true });

const withTask = () => stage().settings({ tools: [...DEFAULT_RUN_SETTINGS.tools, "task"] });

type Ref = { tenantId: string; sessionId: string };

/** The child sessions of the parent's task calls, in call order. */
async function childrenOf(ref: Ref): Promise<Ref[]> {
  return messagesOf(await stage().entries(ref)).flatMap((message) =>
    message.role === "assistant"
      ? message.content.flatMap((block) =>
          block.type === "toolCall" && block.name === "task"
            ? [{ tenantId: ref.tenantId, sessionId: childSessionId(ref.sessionId, block.id) }]
            : [],
        )
      : [],
  );
}

/** Child workflows the parent's history started (one per task call when none started twice). */
async function childStarts(ref: Ref): Promise<string[]> {
  const events = (await stage().client.workflow.getHandle(runWorkflowId(ref)).fetchHistory()).events ?? [];
  return events.flatMap((event) => {
    const id = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    return id ? [id] : [];
  });
}

function taskResults(messages: ReturnType<typeof messagesOf>): ToolResultMessage[] {
  return messages.filter(
    (message): message is ToolResultMessage => message.role === "toolResult" && message.toolName === "task",
  );
}

test("killed right after the child's first answer was stored: the child resumes, started once", async () => {
  stage().llm.addScenario("subcrash-parent", {
    turns: [
      {
        toolCalls: [{ name: "task", arguments: { agent: "explore", prompt: "[scenario:subcrash-child] x" } }],
      },
    ],
    after: { text: "Parent read: {{lastToolResult}}" },
  });
  stage().llm.addScenario("subcrash-child", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "child report" },
  });
  // The second model call of the process is the child's first.
  const first = await stage().startWorker({ KEEL_FAILPOINTS: "llmTurn.afterWrite@2" });
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:subcrash-parent] go", mode: "auto" }, withTask());
  await first.exited();
  const second = await stage().startWorker();
  expect((await stage().result(ref)).status).toBe("completed");
  const [childRef] = await childrenOf(ref);
  if (!childRef) throw new Error("no task call");
  expect(await childStarts(ref)).toEqual([runWorkflowId(childRef)]);
  const child = await stage().result(childRef);
  expect(child.status).toBe("completed");
  // The stored answer was adopted: the child's first model call was made once.
  const childCalls = stage()
    .llm.journal()
    .filter((entry) => entry.scenario === "subcrash-child");
  expect(childCalls.map((entry) => entry.turn)).toEqual([0, 1]);
  const childMessages = messagesOf(await expectIntactSession(stage(), childRef));
  expect(childMessages.map((message) => message.role)).toEqual([
    "user",
    "assistant",
    "toolResult",
    "assistant",
  ]);
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const [result] = taskResults(messages);
  expect(result?.isError).toBe(false);
  expect(result?.content[0]?.type === "text" && result.content[0].text).toContain("child report");
  await second.stop();
});

test("the parent's worker killed while it records the workspace for its children: the next worker records it and the child reads the parent's file", async () => {
  stage().llm.addScenario("subcrash-forkpoint", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "plan.txt", content: "the parent's plan\n" } }] },
      {
        toolCalls: [
          { name: "task", arguments: { agent: "explore", prompt: "[scenario:subcrash-forked] x" } },
        ],
      },
    ],
    after: { text: "Parent read: {{lastToolResult}}" },
  });
  stage().llm.addScenario("subcrash-forked", {
    turns: [{ toolCalls: [{ name: "read", arguments: { path: "plan.txt" } }] }],
    after: { text: "The child read: {{lastToolResult}}" },
  });
  // The process's first snapshot activity follows the write's batch; its second is the parent's,
  // for its child.
  const first = await stage().startWorker({ KEEL_FAILPOINTS: "snapshotWorkspace.start@2" });
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:subcrash-forkpoint] go", mode: "auto" }, withTask());
  await first.exited();
  // Another workspace folder, so another worker queue: the snapshot's retry on the dead worker's
  // queue is never started, and the next worker restores the parent's files from S3.
  const second = await stage().startWorker({
    KEEL_WORKSPACE_ROOT: mkdtempSync(join(testTmpDir(), "forkpoint-workspaces-")),
  });
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const [result] = taskResults(messages);
  expect(result?.isError).toBe(false);
  expect(result?.content[0]?.type === "text" && result.content[0].text).toContain("the parent's plan");
  const [childRef] = await childrenOf(ref);
  if (!childRef) throw new Error("no task call");
  await expectIntactSession(stage(), childRef);
  await second.stop();
});

test("killed while two children run: neither starts twice, the parent gets both answers", async () => {
  stage().llm.addScenario("subcrash-fan", {
    turns: [
      {
        toolCalls: [
          { name: "task", arguments: { agent: "explore", prompt: "[scenario:subcrash-slow] one" } },
          { name: "task", arguments: { agent: "explore", prompt: "[scenario:subcrash-slow] two" } },
        ],
      },
    ],
    after: { text: "both back" },
  });
  stage().llm.addScenario("subcrash-slow", { turns: [], after: { text: "slow child done" } });
  // The children's first model call hangs on the first worker; the new worker's call answers.
  stage().llm.addFaults([
    { kind: "slow", match: { scenario: "subcrash-slow", turn: 0 }, times: 2, latencyMs: 30_000 },
  ]);
  const first = await stage().startWorker();
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:subcrash-fan] go", mode: "auto" }, withTask());
  await modelCalled(stage(), "subcrash-slow");
  await first.kill();
  const second = await stage().startWorker();
  expect((await stage().result(ref)).status).toBe("completed");
  const children = await childrenOf(ref);
  expect(children).toHaveLength(2);
  expect((await childStarts(ref)).sort()).toEqual(children.map(runWorkflowId).sort());
  for (const childRef of children) {
    expect((await stage().result(childRef)).status).toBe("completed");
    const childMessages = messagesOf(await expectIntactSession(stage(), childRef));
    expect(childMessages.map((message) => message.role)).toEqual(["user", "assistant"]);
  }
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const results = taskResults(messages);
  expect(results.map((message) => message.isError)).toEqual([false, false]);
  for (const result of results)
    expect(result.content[0]?.type === "text" && result.content[0].text).toContain("slow child done");
  await second.stop();
});

test("killed after a child's edits were applied to the parent's workspace, before they were recorded: the next worker, on another disk, applies them again", async () => {
  stage().llm.addScenario("submerge-crash-parent", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "plan.txt", content: "parent wrote this\n" } }] },
      {
        toolCalls: [
          { name: "task", arguments: { agent: "editor", prompt: "[scenario:submerge-crash-child] edit" } },
        ],
      },
      { toolCalls: [{ name: "bash", arguments: { command: "cat plan.txt new.txt" } }] },
    ],
    after: { text: "Parent sees: {{lastToolResult}}" },
  });
  stage().llm.addScenario("submerge-crash-child", {
    turns: [
      {
        toolCalls: [
          { name: "edit", arguments: { path: "plan.txt", oldText: "parent", newText: "child" } },
          { name: "write", arguments: { path: "new.txt", content: "new from child\n" } },
        ],
      },
    ],
    after: { text: "edited" },
  });
  const first = await stage().startWorker({ KEEL_FAILPOINTS: "mergeSubAgentWorkspace.afterApply" });
  const ref = stage().newSession();
  const settings = {
    ...withTask(),
    agents: [{ name: "editor", description: "edits", tools: ["read", "write", "edit"] }],
  };
  await stage().runs.deliver(ref, { text: "[scenario:submerge-crash-parent] go", mode: "auto" }, settings);
  await first.exited();
  // Another machine: its workspace root holds nothing of the session.
  await stage().startWorker({ KEEL_WORKSPACE_ROOT: mkdtempSync(join(testTmpDir(), "other-disk-")) });
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const [task] = taskResults(messages);
  expect(task?.details).toMatchObject({ merge: { outcome: "applied", count: 2 } });
  const last = messages.at(-1);
  const seen = last?.role === "assistant" && last.content[0]?.type === "text" ? last.content[0].text : "";
  expect(seen).toContain("child wrote this\nnew from child");
  const [childRef] = await childrenOf(ref);
  if (!childRef) throw new Error("no task call");
  expect(await childStarts(ref)).toEqual([runWorkflowId(childRef)]);
  await expectIntactSession(stage(), childRef);
});
