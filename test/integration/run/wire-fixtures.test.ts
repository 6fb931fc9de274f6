/**
 * Full runs whose tool-calling turn is a provider's documented wire example (test/fixtures/wire/),
 * replayed byte for byte: the model asks for bash, the worker runs it, the model answers.
 */
import { messagesOf, runStageForSuite } from "../../support/run-harness";
import { wireFixture } from "../../support/wire-fixtures";

jest.setTimeout(120_000);

const stage = runStageForSuite();

test.each([
  ["local-chat", "chat-stream-parallel-bash.sse", ["chat-first", "chat-second"]],
  ["local-responses", "responses-stream-bash.sse", ["responses-fixture-ran"]],
  ["local-anthropic", "anthropic-stream-bash.sse", ["anthropic-fixture-ran"]],
])("%s: %s runs bash and the run completes", async (model, fixture, outputs) => {
  const scenario = `wire-${model}`;
  stage().llm.addScenario(scenario, {
    turns: [{ raw: wireFixture(fixture) }, { text: "ran: {{lastToolResult}}" }],
  });
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: `[scenario:${scenario}] go`, mode: "auto" },
    stage().settings({ model }),
  );
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await stage().entries(ref));
  const results = messages.flatMap((message) =>
    message.role === "toolResult"
      ? [message.content.map((block) => (block.type === "text" ? block.text : "")).join("")]
      : [],
  );
  expect(results).toEqual(outputs.map((output) => expect.stringContaining(output)));
  expect(messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
  if (model === "local-anthropic") {
    // message_start's input tokens survive the output-only message_delta.
    expect(messages[1]).toMatchObject({ role: "assistant", usage: { input: 472, output: 89 } });
  }
});

test("a model named in one line (base URL without /v1, no catalog entry) runs bash; its cost is marked unpriced", async () => {
  stage().llm.addScenario("one-line", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo one-line-ran" } }] }, { text: "done" }],
  });
  const ref = stage().newSession();
  const model = `openai-compatible:served-model@${stage().llm.url}`;
  await stage().runs.deliver(
    ref,
    { text: "[scenario:one-line] go", mode: "auto" },
    stage().settings({ model }),
  );
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await stage().entries(ref));
  expect(messages[2]).toMatchObject({ role: "toolResult", isError: false });
  expect(JSON.stringify(messages[2])).toContain("one-line-ran");
  expect(messages[1]).toMatchObject({
    role: "assistant",
    model: "served-model",
    usage: { cost: { unpriced: true } },
  });
  expect(stage().llm.journal().at(-1)?.model).toBe("served-model");
});
