/** Run hooks chosen by name: stop after a turn, block tools, change the next call's settings. */
import { createRunStage, messagesOf, type RunStage } from "../../support/run-harness";

let stage: RunStage;

beforeAll(async () => {
  stage = await createRunStage();
  await stage.startWorker();
  stage.llm.addScenario("hooked", {
    turns: [
      {
        toolCalls: [
          { name: "bash", arguments: { command: "echo one" } },
          { name: "ls", arguments: {} },
        ],
      },
      { toolCalls: [{ name: "bash", arguments: { command: "exit 3" } }] },
    ],
    after: { text: "finished" },
  });
});

afterAll(async () => {
  await stage?.close();
});

function roles(messages: ReturnType<typeof messagesOf>) {
  return messages.map((message) => message.role);
}

/** Runs the `hooked` scenario with `settings`; the run completes; its tool results, in order. */
async function hookedToolResults(settings: Parameters<RunStage["settings"]>[0]) {
  const ref = stage.newSession();
  await stage.runs.deliver(ref, { text: "[scenario:hooked] go", mode: "auto" }, stage.settings(settings));
  expect((await stage.result(ref)).status).toBe("completed");
  return messagesOf(await stage.entries(ref)).filter((message) => message.role === "toolResult");
}

const outcomes = (results: Awaited<ReturnType<typeof hookedToolResults>>) =>
  results.map((result) => result.role === "toolResult" && [result.toolName, result.isError]);

test("single-turn: the run ends after its first turn, with that turn's tool results recorded", async () => {
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "[scenario:hooked] go", mode: "auto" },
    stage.settings({ hooks: ["single-turn"] }),
  );
  const result = await stage.result(ref);
  expect(result).toMatchObject({
    status: "completed",
    reason: "single-turn run ended after turn 1",
    turns: 1,
  });
  expect(roles(messagesOf(await stage.entries(ref)))).toEqual([
    "user",
    "assistant",
    "toolResult",
    "toolResult",
  ]);
});

test("read-only: bash is blocked with a reason the model reads, ls still runs", async () => {
  const results = await hookedToolResults({ hooks: ["read-only"] });
  expect(outcomes(results)).toEqual([
    ["bash", true],
    ["ls", false],
    ["bash", true],
  ]);
  expect(results[0]).toMatchObject({
    content: [{ text: "Tool call blocked: bash is blocked: this run is read-only." }],
  });
});

test("stop-on-tool-error ends the run after the turn whose tool failed; think-after-errors raises the level", async () => {
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "[scenario:hooked] go", mode: "auto" },
    stage.settings({ hooks: ["stop-on-tool-error"] }),
  );
  expect(await stage.result(ref)).toMatchObject({
    status: "completed",
    reason: "stopped after 1 failed tool call(s)",
    turns: 2,
  });

  const thinking = stage.newSession();
  stage.llm.clearJournal();
  await stage.runs.deliver(
    thinking,
    { text: "[scenario:hooked] go", mode: "auto" },
    stage.settings({ hooks: ["think-after-errors"] }),
  );
  expect((await stage.result(thinking)).status).toBe("completed");
  // Only the call after the failed bash (turn index 2) asked the model to think hard.
  const efforts = stage.llm
    .journal()
    .filter((entry) => entry.scenario === "hooked")
    .map((entry) => [entry.turn, (entry.body as { reasoning_effort?: string }).reasoning_effort ?? "none"]);
  expect(efforts).toEqual([
    [0, "none"],
    [1, "none"],
    [2, "high"],
  ]);
});

test("a tool the run was not given is refused, never run: the model naming bash in a run of ls only", async () => {
  const results = await hookedToolResults({ tools: ["ls"] });
  expect(outcomes(results)).toEqual([
    ["bash", true],
    ["ls", false],
    ["bash", true],
  ]);
  expect(results[0]).toMatchObject({
    content: [{ text: "Tool call refused: bash is not one of this run's tools (ls)." }],
  });
  // The refusal is the whole result (one block): `echo one` never ran.
});
