/** Compaction mid-run (threshold and context overflow) and continue-as-new mid-run. */

import { runWorkflowId } from "../../../src/contracts/runs";
import { COMPACTION_SUMMARY_PREFIX, convertToLlm } from "../../../src/core/messages";
import { checkInvariants } from "../../../src/core/sanitize";
import { buildContext } from "../../../src/core/session-tree";
import type { TurnContext } from "../../../src/providers/local-server";
import { messagesOf, runStageForSuite } from "../../support/run-harness";

const stage = runStageForSuite();

const SUMMARY_TEXT = "Summary: the user asked for files; they were listed.";

/**
 * Lists files until the model has seen a compaction summary, then answers; answers summary
 * requests with a fixed summary. The reply depends only on the request (retries get the same).
 */
function compactionAwareScenario(name: string) {
  stage().llm.addScenario(name, {
    turns: [],
    after: ({ request }: TurnContext) => {
      if (request.system.includes("context summarization assistant")) return { text: SUMMARY_TEXT };
      const compacted = request.messages.some(
        (message) =>
          message.role === "user" && message.text.startsWith(COMPACTION_SUMMARY_PREFIX.trim().slice(0, 40)),
      );
      return compacted ? { text: "done after compaction" } : { toolCalls: [{ name: "ls", arguments: {} }] };
    },
  });
}

async function expectCompactedSession(ref: { tenantId: string; sessionId: string }) {
  const entries = await stage().entries(ref);
  const compaction = entries.find((entry) => entry.type === "compaction");
  expect(compaction).toBeDefined();
  expect(compaction?.type === "compaction" && compaction.summary).toContain(SUMMARY_TEXT);
  const context = buildContext(entries);
  expect(context.messages[0]).toMatchObject({ role: "compactionSummary" });
  expect(checkInvariants(convertToLlm(context.messages))).toEqual([]);
  const last = messagesOf(entries).at(-1);
  expect(last?.role === "assistant" && last.content).toEqual([
    { type: "text", text: "done after compaction" },
  ]);
  // The summarizer was asked, through the same wire as the run.
  expect(
    stage()
      .llm.journal()
      .some((entry) => JSON.stringify(entry.body).includes("context summarization assistant")),
  ).toBe(true);
}

test("compaction by threshold at a turn boundary mid-run", async () => {
  compactionAwareScenario("compact-threshold");
  const ref = stage().newSession();
  // A 100k window with 99.9k reserved: compaction is due as soon as the context passes ~100 tokens.
  // The marker sits in the system prompt too: after compaction the first user message is the summary.
  const settings = stage().settings({
    systemPrompt: "[scenario:compact-threshold]",
    compaction: { enabled: true, reserveTokens: 99_900, keepRecentTokens: 40 },
  });
  await stage().runs.deliver(
    ref,
    { text: "[scenario:compact-threshold] list the files", mode: "auto" },
    settings,
  );
  expect((await stage().result(ref)).status).toBe("completed");
  await expectCompactedSession(ref);
});

test("a context-overflow error compacts and retries the call once", async () => {
  compactionAwareScenario("compact-overflow");
  stage().llm.addFaults([
    { kind: "context_overflow", match: { scenario: "compact-overflow", turn: 4 }, times: 1 },
  ]);
  const ref = stage().newSession();
  const settings = stage().settings({
    systemPrompt: "[scenario:compact-overflow]",
    compaction: { enabled: true, reserveTokens: 1_000, keepRecentTokens: 10 },
  });
  await stage().runs.deliver(
    ref,
    { text: "[scenario:compact-overflow] list the files", mode: "auto" },
    settings,
  );
  expect((await stage().result(ref)).status).toBe("completed");
  await expectCompactedSession(ref);
  expect(
    stage()
      .llm.journal()
      .filter((entry) => entry.scenario === "compact-overflow" && entry.fault),
  ).toHaveLength(1);
});

test("continue-as-new mid-run keeps the session, usage and the event sequence", async () => {
  stage().llm.addScenario("many-turns", {
    turns: [1, 2, 3, 4, 5].map(() => ({ toolCalls: [{ name: "ls", arguments: {} }] })),
    after: { text: "all listed" },
  });
  const ref = stage().newSession();
  const settings = stage().settings({ limits: { ...stage().settings().limits, turnsPerExecution: 2 } });
  await stage().runs.deliver(ref, { text: "[scenario:many-turns] list five times", mode: "auto" }, settings);
  const result = await stage().result(ref);
  expect(result).toMatchObject({ status: "completed", turns: 6 });
  const messages = messagesOf(await stage().entries(ref));
  expect(messages.map((message) => message.role)).toEqual([
    "user",
    ...Array(5).fill(["assistant", "toolResult"]).flat(),
    "assistant",
  ]);
  expect(checkInvariants(convertToLlm(messages))).toEqual([]);
  // Usage covers every turn, not only the last execution's.
  const reported = messages.reduce(
    (sum, message) => sum + (message.role === "assistant" ? message.usage.totalTokens : 0),
    0,
  );
  expect(result.usage.totalTokens).toBe(reported);
  // Several executions, one run: the chain has more than one execution and events kept numbering.
  const handle = stage().client.workflow.getHandle(runWorkflowId(ref));
  const description = await handle.describe();
  expect(description.runId).not.toBe(description.raw.workflowExecutionInfo?.firstRunId);
  const events = await stage().runs.events(ref, 0);
  const seqs = events.map((event) => event.seq);
  expect(seqs[0]).toBeGreaterThan(1);
  expect(seqs).toEqual([...Array(seqs.length).keys()].map((i) => seqs[0]! + i));
});
