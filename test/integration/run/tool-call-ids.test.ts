/**
 * Tool calls that are not safe to re-run (bash) whatever ids the provider returns: Responses ids
 * (`call_id|item_id`), ids that repeat on every turn (`call_0`), and a branch that replays an
 * earlier part of the conversation.
 */

import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import type { SessionEntry } from "../../../src/core/session-types";
import { messagesOf, runStageForSuite } from "../../support/run-harness";

jest.setTimeout(120_000);

const stage = runStageForSuite();

/** Tool results as `[toolCallId, text, isError]`, in order. */
function toolResults(entries: SessionEntry[]): Array<[string, string, boolean]> {
  return messagesOf(entries).flatMap((message) =>
    message.role === "toolResult"
      ? [
          [
            message.toolCallId,
            message.content.map((block) => (block.type === "text" ? block.text : "")).join(""),
            message.isError,
          ] as [string, string, boolean],
        ]
      : [],
  );
}

test.each(["local-chat", "local-responses", "local-anthropic"])(
  "bash runs over %s (Responses ids contain '|')",
  async (model) => {
    stage().llm.addScenario("bash-once", {
      turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo bash-ran" } }] }, { text: "done" }],
    });
    const ref = stage().newSession();
    await stage().runs.deliver(
      ref,
      { text: "[scenario:bash-once] go", mode: "auto" },
      stage().settings({ model }),
    );
    expect((await stage().result(ref)).status).toBe("completed");
    const results = toolResults(await stage().entries(ref));
    expect(results).toHaveLength(1);
    expect(results[0]?.[1]).toContain("bash-ran");
    expect(results[0]?.[2]).toBe(false);
    if (model === "local-responses") expect(results[0]?.[0]).toContain("|");
  },
);

test("a provider that returns call_0 on every turn: every bash call runs", async () => {
  stage().llm.addScenario("call-zero", {
    turns: [
      { toolCalls: [{ id: "call_0", name: "bash", arguments: { command: "echo first" } }] },
      { toolCalls: [{ id: "call_0", name: "bash", arguments: { command: "echo second" } }] },
      { text: "done" },
    ],
  });
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:call-zero] go", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");
  const results = toolResults(await stage().entries(ref));
  // Stored ids stay unique keys (results pair with calls by id); the repeat gets a suffix.
  const ids = results.map(([id]) => id);
  expect(ids).toEqual(["call_0", expect.stringMatching(/^call_0_k[0-9a-f]{8}$/)]);
  expect(results.map(([, text]) => text)).toEqual([
    expect.stringContaining("first"),
    expect.stringContaining("second"),
  ]);
  expect(results.map(([, text]) => text).join("\n")).not.toContain(UNKNOWN_OUTCOME_TEXT);
});

test("branching back to an earlier prompt and continuing runs bash again (same provider ids)", async () => {
  stage().llm.addScenario("branch-bash", {
    turns: [
      { toolCalls: [{ name: "bash", arguments: { command: "echo turn-1" } }] },
      { text: "first part done" },
      { toolCalls: [{ name: "bash", arguments: { command: "echo turn-2" } }] },
      { text: "second part done" },
    ],
    after: { toolCalls: [{ name: "bash", arguments: { command: "echo after" } }] },
  });
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:branch-bash] start", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");
  await stage().runs.deliver(ref, { text: "more", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");

  const before = await stage().entries(ref);
  const secondPrompt = before.find(
    (entry) => entry.type === "message" && entry.message.role === "user" && entry.message.content === "more",
  );
  expect(secondPrompt).toBeDefined();
  // Back to the first answer: the next request holds the same messages as the "more" request did,
  // so the server answers with the same tool-call id as before.
  await stage().runs.branch(ref, { entryId: secondPrompt!.parentId!, summarize: false, model: "local-chat" });
  await stage().runs.deliver(ref, { text: "continue", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");

  const results = toolResults(await stage().entries(ref));
  expect(results).toHaveLength(3);
  // The replayed turn asked for the same id as the one on the abandoned branch …
  expect(results[2]?.[0]).toBe(results[1]?.[0]);
  // … and bash still ran.
  expect(results[2]?.[1]).toContain("turn-2");
  expect(results[2]?.[2]).toBe(false);
});
