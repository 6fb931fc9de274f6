/** Id normalisation and history conversion, checked on the request bodies the SDKs send. */
import type { AssistantMessage, Message } from "../../../src/core/messages";
import { emptyUsage } from "../../../src/core/usage";
import { type LocalLlmServer, startLocalLlmServer } from "../../../src/providers/local-server";
import { resolveModel } from "../../../src/providers/models";
import { createProvider } from "../../../src/providers/registry";
import {
  ANTHROPIC_TOOL_ID_MAX,
  CHAT_TOOL_ID_MAX,
  toAnthropicToolId,
  toChatToolId,
  toResponsesToolIds,
} from "../../../src/providers/tool-call-ids";

const ANTHROPIC_ID = /^[a-zA-Z0-9_-]+$/;
const LONG_RESPONSES_ID = `call_${"a".repeat(30)}|fc_${"b+/=".repeat(120)}`;

describe("tool-call id normalisation", () => {
  test.each([
    ["toolu_01A09q90qw90lq917835lq9", "toolu_01A09q90qw90lq917835lq9"],
    ["call_abc|fc_def", undefined],
    [LONG_RESPONSES_ID, undefined],
  ])("Anthropic ids are safe and stable: %s", (id, expected) => {
    const normalised = toAnthropicToolId(id);
    expect(normalised).toMatch(ANTHROPIC_ID);
    expect(normalised.length).toBeLessThanOrEqual(ANTHROPIC_TOOL_ID_MAX);
    expect(toAnthropicToolId(id)).toBe(normalised);
    if (expected) expect(normalised).toBe(expected);
  });

  test("ids that sanitise alike stay distinct", () => {
    expect(toAnthropicToolId("a|b")).not.toBe(toAnthropicToolId("a_b"));
  });

  test("Chat Completions ids use the call id part and fit 40 characters", () => {
    expect(toChatToolId("call_abc|fc_def")).toBe("call_abc");
    expect(toChatToolId(LONG_RESPONSES_ID).length).toBeLessThanOrEqual(CHAT_TOOL_ID_MAX);
  });

  test("Responses ids: own item ids kept, foreign ids get fc_ item ids", () => {
    expect(toResponsesToolIds("call_abc|fc_def")).toEqual({ callId: "call_abc", itemId: "fc_def" });
    const foreign = toResponsesToolIds("toolu_01XYZ");
    expect(foreign.callId).toBe("toolu_01XYZ");
    expect(foreign.itemId).toMatch(/^fc_[0-9a-f]+$/);
    expect(toResponsesToolIds("toolu_01XYZ")).toEqual(foreign);
  });
});

let server: LocalLlmServer;
beforeAll(async () => {
  server = await startLocalLlmServer({ journalBodies: true });
});
afterAll(() => server.close());
beforeEach(() => server.clearJournal());

function provider(promptCaching?: boolean) {
  return createProvider({
    openai: { apiKey: "k", baseURL: server.openaiBaseURL },
    anthropic: {
      apiKey: "k",
      baseURL: server.anthropicBaseURL,
      ...(promptCaching === undefined ? {} : { promptCaching }),
    },
    env: {},
  });
}

function assistant(model: string, api: string, content: AssistantMessage["content"]): AssistantMessage {
  return {
    role: "assistant",
    content,
    api,
    provider: "local",
    model,
    usage: emptyUsage(),
    stopReason: "toolUse",
    timestamp: 1,
  };
}

const result = (id: string, text: string): Message => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "read",
  content: [{ type: "text", text }],
  isError: false,
  timestamp: 1,
});

const lastBody = () => server.journal().at(-1)?.body as Record<string, unknown> & { messages: unknown[] };

describe("Anthropic request conversion", () => {
  const model = resolveModel("local-anthropic");
  const history: Message[] = [
    { role: "user", content: "read two files", timestamp: 1 },
    assistant("local-anthropic", "anthropic-messages", [
      { type: "thinking", thinking: "I need both files.", thinkingSignature: "sig-1" },
      { type: "thinking", thinking: "", thinkingSignature: "opaque-redacted", redacted: true },
      { type: "toolCall", id: "toolu_1", name: "read", arguments: { path: "a" } },
      { type: "toolCall", id: LONG_RESPONSES_ID, name: "read", arguments: { path: "b" } },
    ]),
    result("toolu_1", "A"),
    result(LONG_RESPONSES_ID, "B"),
  ];

  test("signatures replayed, redacted thinking kept, results grouped, ids normalised, cache marks", async () => {
    await provider().complete(model, { systemPrompt: "sys", messages: history });
    const body = lastBody();
    expect(body.system).toEqual([{ type: "text", text: "sys", cache_control: { type: "ephemeral" } }]);
    const [, assistantParam, results] = body.messages as {
      role: string;
      content: Record<string, unknown>[];
    }[];
    expect(assistantParam!.content).toEqual([
      { type: "thinking", thinking: "I need both files.", signature: "sig-1" },
      { type: "redacted_thinking", data: "opaque-redacted" },
      { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a" } },
      { type: "tool_use", id: toAnthropicToolId(LONG_RESPONSES_ID), name: "read", input: { path: "b" } },
    ]);
    expect(results!.role).toBe("user");
    expect(results!.content.map((block) => [block.type, block.tool_use_id])).toEqual([
      ["tool_result", "toolu_1"],
      ["tool_result", toAnthropicToolId(LONG_RESPONSES_ID)],
    ]);
    expect(results!.content[1]!.cache_control).toEqual({ type: "ephemeral" });
    expect(results!.content[0]!.cache_control).toBeUndefined();
  });

  test("prompt caching can be switched off", async () => {
    await provider(false).complete(model, { systemPrompt: "sys", messages: history });
    expect(JSON.stringify(lastBody())).not.toContain("cache_control");
  });

  test("another model's thinking becomes text and loses its signature; redacted is dropped", async () => {
    const foreign: Message[] = [
      history[0]!,
      { ...(history[1] as AssistantMessage), model: "other" },
      ...history.slice(2),
    ];
    await provider().complete(model, { messages: foreign });
    const assistantParam = (lastBody().messages as { content: Record<string, unknown>[] }[])[1]!;
    expect(assistantParam.content.slice(0, 1)).toEqual([{ type: "text", text: "I need both files." }]);
    expect(JSON.stringify(assistantParam)).not.toContain("redacted");
  });

  test("failed turns are skipped and unanswered tool calls get a synthetic result", async () => {
    const failed: AssistantMessage = {
      ...assistant("local-anthropic", "anthropic-messages", [{ type: "text", text: "half" }]),
      stopReason: "error",
    };
    const dangling = assistant("local-anthropic", "anthropic-messages", [
      { type: "toolCall", id: "toolu_9", name: "read", arguments: {} },
    ]);
    await provider().complete(model, {
      messages: [
        { role: "user", content: "go", timestamp: 1 },
        failed,
        dangling,
        { role: "user", content: "next", timestamp: 2 },
      ],
    });
    const messages = lastBody().messages as { role: string; content: Record<string, unknown>[] }[];
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "user"]);
    expect(messages[2]!.content[0]).toMatchObject({
      type: "tool_result",
      tool_use_id: "toolu_9",
      is_error: true,
    });
  });
});

describe("OpenAI request conversion", () => {
  const anthropicHistory: Message[] = [
    { role: "user", content: "read", timestamp: 1 },
    assistant("claude", "anthropic-messages", [
      { type: "thinking", thinking: "hmm", thinkingSignature: "sig" },
      { type: "toolCall", id: "toolu_01ABC", name: "read", arguments: { path: "a" } },
    ]),
    result("toolu_01ABC", "A"),
  ];

  test("Chat Completions: tool calls and results linked by the same id", async () => {
    await provider().complete(resolveModel("local-chat"), { messages: anthropicHistory });
    const messages = lastBody().messages as Record<string, unknown>[];
    expect(messages[1]).toMatchObject({
      role: "assistant",
      content: "hmm",
      tool_calls: [
        { id: "toolu_01ABC", type: "function", function: { name: "read", arguments: '{"path":"a"}' } },
      ],
    });
    expect(messages[2]).toEqual({ role: "tool", tool_call_id: "toolu_01ABC", content: "A" });
  });

  test("Responses: foreign calls get fc_ item ids, outputs share the call id", async () => {
    await provider().complete(resolveModel("local-responses"), { messages: anthropicHistory });
    const input = lastBody().input as Record<string, unknown>[];
    const call = input.find((item) => item.type === "function_call");
    const output = input.find((item) => item.type === "function_call_output");
    expect(call).toMatchObject({ call_id: "toolu_01ABC", id: expect.stringMatching(/^fc_/) });
    expect(output).toEqual({ type: "function_call_output", call_id: "toolu_01ABC", output: "A" });
    expect(lastBody().store).toBe(false);
  });

  test("Responses: own reasoning items are replayed whole", async () => {
    const reasoning = { id: "rs_1", type: "reasoning", summary: [], encrypted_content: "enc" };
    const own = assistant("local-responses", "openai-responses", [
      { type: "thinking", thinking: "x", thinkingSignature: JSON.stringify(reasoning) },
      { type: "text", text: "hi", textSignature: "msg_1" },
    ]);
    await provider().complete(resolveModel("local-responses"), {
      messages: [
        { role: "user", content: "a", timestamp: 1 },
        { ...own, stopReason: "stop" },
        { role: "user", content: "b", timestamp: 2 },
      ],
    });
    const input = lastBody().input as Record<string, unknown>[];
    expect(input[1]).toEqual(reasoning);
    expect(input[2]).toMatchObject({ type: "message", id: "msg_1", role: "assistant" });
  });
});
