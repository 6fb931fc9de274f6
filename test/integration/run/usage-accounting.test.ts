/**
 * One accounting of a run's usage: what the run reports as its total is the sum of the usage
 * stored on its assistant entries (what the turn lines, the session view and an export read),
 * including model calls that overflowed the context window. The local LLM server reports more
 * prompt tokens than `local-chat`'s 100k window: the server took the prompt and billed it.
 */
import type { AssistantMessage } from "../../../src/core/messages";
import type { TurnContext } from "../../../src/providers/local-server";
import { expectIntactSession, messagesOf, runStageForSuite } from "../../support/run-harness";

const stage = runStageForSuite();

/** More prompt tokens than local-chat's 100k window; $0.4608 at its $1 per million input tokens. */
const OVERFLOW_INPUT = 460_842;

/** Every answer overflows the window, except the summarizer's (compaction's own model call). */
function overflowingScenario(name: string): void {
  stage().llm.addScenario(name, {
    turns: [],
    after: ({ request }: TurnContext) =>
      request.system.includes("context summarization assistant")
        ? { text: "Summary: the user asked for a large answer." }
        : { text: "an answer to a prompt too big", usage: { input: OVERFLOW_INPUT, output: 10 } },
  });
}

function assistantsOf(messages: ReturnType<typeof messagesOf>): AssistantMessage[] {
  return messages.filter((message): message is AssistantMessage => message.role === "assistant");
}

test.each([
  ["compaction off: the overflow fails the run", "usage-overflow-fail", false, 1],
  ["compaction on: compacts, retries once, overflows again and fails", "usage-overflow-retry", true, 2],
])("%s; the stored usage adds up to the run's total", async (_title, scenario, compaction, calls) => {
  overflowingScenario(scenario);
  const ref = stage().newSession();
  const settings = stage().settings({
    systemPrompt: `[scenario:${scenario}]`,
    compaction: { enabled: compaction, reserveTokens: 1_000, keepRecentTokens: 10 },
  });
  await stage().runs.deliver(
    ref,
    { text: `[scenario:${scenario}] answer at length`, mode: "auto" },
    settings,
  );
  const result = await stage().result(ref);
  expect(result.status).toBe("failed");
  expect(result.reason).toMatch(/context overflow/);
  expect(result.usage.input).toBe(calls * OVERFLOW_INPUT);

  const entries = await expectIntactSession(stage(), ref);
  const assistants = assistantsOf(messagesOf(entries));
  // Every overflowed call is stored (as an error the model is not shown again) with its usage.
  expect(assistants).toHaveLength(calls);
  for (const message of assistants) {
    expect(message).toMatchObject({ stopReason: "error", usage: { input: OVERFLOW_INPUT } });
    expect(message.errorMessage).toMatch(/window/);
  }
  const stored = assistants.reduce((sum, message) => sum + message.usage.input, 0);
  const storedCost = assistants.reduce((sum, message) => sum + message.usage.cost.total, 0);
  expect(stored).toBe(result.usage.input);
  expect(storedCost).toBeCloseTo(result.usage.cost.total, 10);

  // Each model call's `message_end` names a stored entry: the turn line shows that entry's usage.
  const ids = new Set(entries.map((entry) => entry.id));
  const ends = (await stage().runs.events(ref, 0)).flatMap((event) =>
    event.type === "message_end" && event.role === "assistant" ? [event.entryId] : [],
  );
  expect(ends).toHaveLength(calls);
  expect(ends.every((id) => ids.has(id))).toBe(true);
});
