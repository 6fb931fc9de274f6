/**
 * The providers against the providers' own documented wire examples (test/fixtures/wire/),
 * replayed byte for byte by the local server and parsed by the real SDKs.
 */
import type { LlmContext, ToolSpec } from "../../../src/core/messages";
import { type LocalLlmServer, startLocalLlmServer } from "../../../src/providers/local-server";
import { resolveModel } from "../../../src/providers/models";
import { createProvider } from "../../../src/providers/registry";
import type { ProviderConnection, ProviderResult } from "../../../src/providers/types";
import { wireFixture } from "../../support/wire-fixtures";

const TOOLS: ToolSpec[] = [
  { name: "get_weather", description: "Weather", parameters: { type: "object", properties: {} } },
  { name: "bash", description: "Run a command", parameters: { type: "object", properties: {} } },
];

let server: LocalLlmServer;

beforeAll(async () => {
  server = await startLocalLlmServer();
});
afterAll(() => server.close());

/** One call of `model` answered by fixture `name`. */
async function replay(
  name: string,
  model: string,
  connection: Partial<ProviderConnection> = {},
): Promise<ProviderResult> {
  const scenario = name.replace(/\.\w+$/, "").replace(/[^A-Za-z0-9_.-]/g, "_");
  server.addScenario(scenario, { turns: [{ raw: wireFixture(name) }] });
  const provider = createProvider({
    openai: { apiKey: "k", baseURL: server.openaiBaseURL, ...connection },
    anthropic: { apiKey: "k", baseURL: server.anthropicBaseURL, ...connection },
    env: {},
  });
  const context: LlmContext = {
    messages: [{ role: "user", content: `[scenario:${scenario}] hi`, timestamp: 0 }],
    tools: TOOLS,
  };
  return provider.complete(resolveModel(model), context);
}

describe("Anthropic Messages", () => {
  it("keeps message_start's input tokens when message_delta reports only output_tokens", async () => {
    const { message, error } = await replay("anthropic-stream-text.sse", "local-anthropic");
    expect(error).toBeUndefined();
    expect(message.content).toEqual([{ type: "text", text: "Hello!" }]);
    expect(message.stopReason).toBe("stop");
    expect(message.usage).toMatchObject({
      input: 25,
      output: 15,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 40,
    });
    expect(message.usage.estimated).toBeUndefined();
  });

  it("streams a documented tool use with its usage", async () => {
    const { message } = await replay("anthropic-stream-tool-use.sse", "local-anthropic");
    expect(message.stopReason).toBe("toolUse");
    expect(message.content).toEqual([
      { type: "text", text: "Okay, let's check the weather for San Francisco, CA:" },
      {
        type: "toolCall",
        id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        name: "get_weather",
        arguments: { location: "San Francisco, CA", unit: "fahrenheit" },
      },
    ]);
    expect(message.usage).toMatchObject({ input: 472, output: 89 });
  });

  it("reads the documented non-streaming response", async () => {
    const { message } = await replay("anthropic-message.json", "local-anthropic", { stream: false });
    expect(message.content).toEqual([{ type: "text", text: "Hi! My name is Claude." }]);
    expect(message.usage).toMatchObject({ input: 2095, output: 503 });
  });
});

describe("OpenAI Responses", () => {
  it("keeps call_id and item id of a streamed function call", async () => {
    const { message, error } = await replay("responses-stream-function-call.sse", "local-responses");
    expect(error).toBeUndefined();
    expect(message.stopReason).toBe("toolUse");
    expect(message.content).toEqual([
      {
        type: "toolCall",
        id: "call_1234xyz|fc_1234xyz",
        name: "get_weather",
        arguments: { location: "Paris, France" },
      },
    ]);
    expect(message.usage).toMatchObject({ input: 291, output: 23 });
  });
});

describe("OpenAI Chat Completions", () => {
  it("estimates usage for a stream without a usage chunk, and marks it", async () => {
    const { message, error } = await replay("chat-stream-text-no-usage.sse", "local-chat");
    expect(error).toBeUndefined();
    expect(message.content).toEqual([{ type: "text", text: "Hello!" }]);
    expect(message.usage.estimated).toBe(true);
    expect(message.usage.input).toBeGreaterThan(0);
    expect(message.usage.output).toBe(2); // "Hello!" = 6 characters
  });

  it("reads two tool calls streamed at once", async () => {
    const { message } = await replay("chat-stream-parallel-bash.sse", "local-chat");
    expect(message.stopReason).toBe("toolUse");
    expect(message.content).toEqual([
      {
        type: "toolCall",
        id: "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        name: "bash",
        arguments: { command: "echo chat-first" },
      },
      {
        type: "toolCall",
        id: "call_ABPjzLhN8Lu4CXzI4WcF2k1s",
        name: "bash",
        arguments: { command: "echo chat-second" },
      },
    ]);
  });

  it("turns a refusal into a non-retryable error that keeps the refusal text", async () => {
    const { message, error } = await replay("chat-refusal.json", "local-chat", { stream: false });
    expect(error?.kind).toBe("non_retryable");
    expect(message.content).toEqual([
      { type: "text", text: "I'm sorry, I cannot assist with that request." },
    ]);
  });

  it.each([
    ["chat-empty-choices.json", false],
    ["chat-stream-empty-choices.sse", true],
  ])("treats an empty choices list (%s) as a retryable error", async (name, stream) => {
    const { error } = await replay(name, "local-chat", { stream });
    expect(error).toMatchObject({ kind: "retryable", message: expect.stringContaining("no choices") });
  });
});
