import { execFileSync } from "node:child_process";
import { ABORTED_TOOL_RESULT_TEXT, INTERRUPTED_MARKER } from "../../../src/core/markers";
import { convertToLlm } from "../../../src/core/messages";
import { checkInvariants } from "../../../src/core/sanitize";
import { eventually, messagesOf, modelCalled, runStageForSuite } from "../../support/run-harness";

const stage = runStageForSuite();

function processesMatching(pattern: string): string[] {
  try {
    return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" }).trim().split("\n").filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

async function expectUsableAfterwards(ref: { tenantId: string; sessionId: string }) {
  const messages = messagesOf(await stage().entries(ref));
  expect(checkInvariants(convertToLlm(messages))).toEqual([]);
  const next = await stage().runs.deliver(ref, { text: "are you there?", mode: "auto" }, stage().settings());
  expect(next.delivery).toBe("started");
  expect((await stage().result(ref)).status).toBe("completed");
  const after = messagesOf(await stage().entries(ref));
  const last = after.at(-1);
  expect(last?.role === "assistant" && last.content).toEqual([
    { type: "text", text: "You said: are you there?" },
  ]);
  expect(checkInvariants(convertToLlm(after))).toEqual([]);
}

test("abort during a hung model call ends the run within seconds and leaves a usable session", async () => {
  stage().llm.addScenario("hung", { turns: [], after: { text: "You said: {{lastUser}}" } });
  stage().llm.addFaults([{ kind: "hang", match: { scenario: "hung" } }]);
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:hung] think hard", mode: "auto" }, stage().settings());
  await modelCalled(stage(), "hung");
  const abortedAt = Date.now();
  expect(await stage().runs.signalAbort(ref, "user pressed stop")).toBe("sent");
  const result = await stage().result(ref);
  expect(Date.now() - abortedAt).toBeLessThan(10_000);
  expect(result).toMatchObject({ status: "aborted", reason: "user pressed stop" });
  const messages = messagesOf(await stage().entries(ref));
  expect(messages).toHaveLength(2);
  expect(messages[1]).toMatchObject({ role: "assistant", stopReason: "aborted" });
  expect(messages[1]?.role === "assistant" && messages[1].content).toEqual([
    { type: "text", text: INTERRUPTED_MARKER },
  ]);
  await expectUsableAfterwards(ref);
});

test("abort during a long bash kills its process group and closes the tool call", async () => {
  const marker = `${Math.floor(Math.random() * 1e6)}`;
  stage().llm.addScenario("long-bash", {
    turns: [
      {
        toolCalls: [
          { name: "bash", arguments: { command: `sleep 60.${marker} & sleep 61.${marker}; wait` } },
        ],
      },
    ],
    after: { text: "You said: {{lastUser}}" },
  });
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:long-bash] build it", mode: "auto" },
    stage().settings(),
  );
  // Both sleeps (and the shell that started them) are running.
  await eventually(async () => (processesMatching(`sleep 6[01].${marker}`).length >= 2 ? true : undefined));
  const abortedAt = Date.now();
  await stage().runs.signalAbort(ref, "too slow");
  expect((await stage().result(ref)).status).toBe("aborted");
  expect(Date.now() - abortedAt).toBeLessThan(10_000);
  await eventually(
    async () => (processesMatching(`sleep 6[01].${marker}`).length === 0 ? true : undefined),
    5_000,
  );
  const messages = messagesOf(await stage().entries(ref));
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult"]);
  const result = messages[2];
  expect(result).toMatchObject({ role: "toolResult", isError: true });
  const text =
    result?.role === "toolResult" && result.content[0]?.type === "text" ? result.content[0].text : "";
  // Either the tool's own cancellation report (with its output) or the synthetic result.
  expect(text === ABORTED_TOOL_RESULT_TEXT || /abort/i.test(text)).toBe(true);
  // The event says what was stored: an error, closed by the abort — not a completed call.
  const ends = (await stage().runs.events(ref, 0)).filter((event) => event.type === "tool_execution_end");
  expect(ends).toEqual([expect.objectContaining({ toolName: "bash", state: "cancelled", isError: true })]);
  await expectUsableAfterwards(ref);
});

test("abort before the run got going ends it cleanly", async () => {
  stage().llm.addScenario("hung-early", { turns: [], after: { text: "You said: {{lastUser}}" } });
  stage().llm.addFaults([{ kind: "hang", match: { scenario: "hung-early" } }]);
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:hung-early] go", mode: "auto" }, stage().settings());
  await stage().runs.signalAbort(ref, "changed my mind");
  expect((await stage().result(ref)).status).toBe("aborted");
  const messages = messagesOf(await stage().entries(ref));
  expect(checkInvariants(convertToLlm(messages))).toEqual([]);
});
