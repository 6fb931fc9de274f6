/**
 * Each provider through its real SDK against the local wire-compatible server.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { AssistantMessage, LlmContext, Message, ToolSpec } from "../../../src/core/messages";
import { type LocalLlmServer, startLocalLlmServer } from "../../../src/providers/local-server";
import { computeCost, loadCatalog, resolveModel } from "../../../src/providers/models";
import { createProvider } from "../../../src/providers/registry";
import type { ModelApi, ModelInfo, Provider } from "../../../src/providers/types";

const READ_TOOL: ToolSpec = {
  name: "read",
  description: "Read a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const LS_TOOL: ToolSpec = {
  name: "ls",
  description: "List a directory",
  parameters: { type: "object", properties: { path: { type: "string" } } },
};

const MODEL_OF_API: Record<ModelApi, string> = {
  "openai-completions": "local-chat",
  "openai-responses": "local-responses",
  "anthropic-messages": "local-anthropic",
};

let server: LocalLlmServer;

beforeAll(async () => {
  server = await startLocalLlmServer({
    scenarios: {
      think: { turns: [{ thinking: "Two plus two is four.", text: "The answer is 4." }] },
      tools: {
        turns: [
          { text: "Reading both.", toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
          {
            toolCalls: [
              { name: "read", arguments: { path: "b.txt" } },
              { name: "ls", arguments: { path: "src" } },
            ],
          },
        ],
        after: { text: "Last result: {{lastToolResult}}" },
      },
      usage: {
        turns: [{ text: "Counted.", usage: { input: 1200, output: 345, cacheRead: 800, cacheWrite: 64 } }],
      },
      huge: { turns: [{ text: "Too big.", usage: { input: 150_000, output: 3 } }] },
      slow: {
        turns: [{ text: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen" }],
      },
      long: { turns: [{ text: "Cut short", stopReason: "length" }] },
      refuse: { turns: [{ text: "I can't", stopReason: "refusal" }] },
      textual: {
        turns: [{ text: '<tool_call>{"name": "read", "arguments": {"path": "x.ts"}}</tool_call>' }],
      },
    },
  });
});

afterAll(async () => {
  await server.close();
});

beforeEach(() => {
  server.clearJournal();
  server.clearFaults();
});

function providerFor(
  options: { stream?: boolean; headers?: Record<string, string>; timeoutMs?: number } = {},
) {
  const connection = { apiKey: "test-key", ...options };
  return createProvider({
    openai: { ...connection, baseURL: server.openaiBaseURL },
    anthropic: { ...connection, baseURL: server.anthropicBaseURL },
    env: {},
  });
}

function user(text: string): Message {
  return { role: "user", content: text, timestamp: 1 };
}

function toolResult(id: string, name: string, text: string): Message {
  return {
    role: "toolResult",
    toolCallId: id,
    toolName: name,
    content: [{ type: "text", text }],
    isError: false,
    timestamp: 1,
  };
}

function context(messages: Message[], tools: ToolSpec[] = []): LlmContext {
  return { systemPrompt: "You are a test model.", messages, tools };
}

function textOf(message: AssistantMessage): string {
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

const APIS = Object.keys(MODEL_OF_API) as ModelApi[];
const MODES = [
  { label: "streaming", stream: true },
  { label: "non-streaming", stream: false },
];

describe.each(APIS)("%s", (api) => {
  const model = resolveModel(MODEL_OF_API[api]);

  describe.each(MODES)("$label", ({ stream }) => {
    let provider: Provider;
    beforeAll(() => {
      provider = providerFor({ stream });
    });

    test("plain text echoes the last user message", async () => {
      const result = await provider.complete(model, context([user("hello keel")]));
      expect(result.error).toBeUndefined();
      expect(result.message.stopReason).toBe("stop");
      expect(textOf(result.message)).toBe("You said: hello keel");
      expect(result.message).toMatchObject({ api, provider: "local", model: model.id, role: "assistant" });
      expect(server.journal()).toEqual([
        expect.objectContaining({
          api,
          model: model.id,
          stream,
          scenario: "default",
          turn: 0,
          outcome: "completed",
        }),
      ]);
    });

    test("thinking is returned when requested and absent otherwise", async () => {
      const thinking = await provider.complete(model, context([user("[scenario:think] 2+2?")]), {
        thinkingLevel: "medium",
      });
      const blocks = thinking.message.content;
      expect(blocks[0]).toMatchObject({ type: "thinking", thinking: "Two plus two is four." });
      expect(textOf(thinking.message)).toBe("The answer is 4.");
      if (api !== "openai-completions") {
        expect(blocks[0]).toHaveProperty("thinkingSignature", expect.stringMatching(/.+/));
      }
      const plain = await provider.complete(model, context([user("[scenario:think] 2+2?")]));
      expect(plain.message.content.map((block) => block.type)).toEqual(["text"]);
    });

    test("single, then parallel tool calls, then an answer from the tool result", async () => {
      const tools = [READ_TOOL, LS_TOOL];
      const history: Message[] = [user("[scenario:tools] inspect")];
      const first = await provider.complete(model, context(history, tools));
      expect(first.message.stopReason).toBe("toolUse");
      const firstCalls = first.message.content.filter((block) => block.type === "toolCall");
      expect(firstCalls).toEqual([
        expect.objectContaining({ type: "toolCall", name: "read", arguments: { path: "a.txt" } }),
      ]);
      history.push(first.message, toolResult(firstCalls[0]!.id, "read", "contents of a"));

      const second = await provider.complete(model, context(history, tools));
      const calls = second.message.content.filter((block) => block.type === "toolCall");
      expect(calls.map((call) => [call.name, call.arguments])).toEqual([
        ["read", { path: "b.txt" }],
        ["ls", { path: "src" }],
      ]);
      expect(new Set(calls.map((call) => call.id)).size).toBe(2);
      history.push(
        second.message,
        toolResult(calls[0]!.id, "read", "contents of b"),
        toolResult(calls[1]!.id, "ls", "index.ts"),
      );

      const third = await provider.complete(model, context(history, tools));
      expect(third.message.stopReason).toBe("stop");
      expect(textOf(third.message)).toBe("Last result: index.ts");
      expect(server.journal().map((entry) => entry.turn)).toEqual([0, 1, 2]);
    });

    test("usage and cost are exact", async () => {
      const result = await provider.complete(model, context([user("[scenario:usage] count")]));
      // OpenAI wires have no cache-write figure; Anthropic reports all four.
      const cacheWrite = api === "anthropic-messages" ? 64 : 0;
      const counts = { input: 1200, output: 345, cacheRead: 800, cacheWrite };
      expect(result.message.usage).toEqual({
        ...counts,
        totalTokens: 1200 + 345 + 800 + cacheWrite,
        cost: computeCost(model, { ...counts, totalTokens: 0 }),
      });
      // local models: $1 in, $2 out, $0.5 cache read, $1.25 cache write per million.
      expect(result.message.usage.cost.total).toBeCloseTo(
        (1200 * 1 + 345 * 2 + 800 * 0.5 + cacheWrite * 1.25) / 1_000_000,
        12,
      );
    });

    test("a max-tokens stop maps to length", async () => {
      const result = await provider.complete(model, context([user("[scenario:long] go")]));
      expect(result.message.stopReason).toBe("length");
      expect(textOf(result.message)).toBe("Cut short");
    });

    test("a refusal / content-filter stop is a non-retryable error with the text kept", async () => {
      const result = await provider.complete(model, context([user("[scenario:refuse] go")]));
      expect(result.message.stopReason).toBe("error");
      expect(result.error?.kind).toBe("non_retryable");
      expect(textOf(result.message)).toBe("I can't");
    });

    test("usage beyond the context window is a context overflow", async () => {
      const result = await provider.complete(model, context([user("[scenario:huge] go")]));
      expect(result.message.stopReason).toBe("error");
      expect(result.error).toMatchObject({ kind: "context_overflow" });
    });

    test("a stream cut mid-way is retryable", async () => {
      server.addFaults([{ kind: "cut_stream", cutAfterEvents: 3 }]);
      const result = await provider.complete(model, context([user("[scenario:slow] go")]));
      expect(result.message.stopReason).toBe("error");
      expect(result.error?.kind).toBe("retryable");
      expect(server.journal()[0]).toMatchObject({ fault: "cut_stream", outcome: "cut" });
    });
  });

  describe("errors", () => {
    const provider = () => providerFor();
    const ask = () => provider().complete(model, context([user("hi")]));

    test.each([
      ["rate_limit", 429],
      ["server_error", 500],
      ["overloaded", api === "anthropic-messages" ? 529 : 503],
    ])("%s is retryable with status %i", async (kind, status) => {
      server.addFaults([{ kind: kind as "rate_limit", retryAfterSeconds: 7 }]);
      const result = await ask();
      expect(result.message.stopReason).toBe("error");
      expect(result.error).toMatchObject({ kind: "retryable", status });
      if (kind !== "server_error") expect(result.error?.retryAfterMs).toBe(7000);
      expect(server.journal()).toHaveLength(1); // the SDK itself never retried
    });

    test.each([
      ["unauthorized", 401],
      ["bad_request", 400],
    ])("%s is non-retryable", async (kind, status) => {
      server.addFaults([{ kind: kind as "unauthorized" }]);
      const result = await ask();
      expect(result.error).toMatchObject({ kind: "non_retryable", status });
      expect(result.message.errorMessage).toEqual(expect.any(String));
    });

    test("the provider's context-overflow wording is recognised", async () => {
      server.addFaults([{ kind: "context_overflow" }]);
      const result = await ask();
      expect(result.error).toMatchObject({ kind: "context_overflow", status: 400 });
    });

    test("an unknown route is non-retryable (404)", async () => {
      const wrong = createProvider({
        openai: { apiKey: "k", baseURL: `${server.url}/nowhere` },
        anthropic: { apiKey: "k", baseURL: `${server.url}/nowhere` },
        env: {},
      });
      const result = await wrong.complete(model, context([user("hi")]));
      expect(result.error).toMatchObject({ kind: "non_retryable", status: 404 });
    });

    test("a hung response times out as retryable", async () => {
      server.addFaults([{ kind: "hang" }]);
      const result = await providerFor({ timeoutMs: 300 }).complete(model, context([user("hi")]));
      expect(result.error?.kind).toBe("retryable");
      expect(result.message.stopReason).toBe("error");
    });

    test("a refused connection is retryable", async () => {
      const closed = await startLocalLlmServer();
      const url = closed.url;
      await closed.close();
      const unreachable = createProvider({
        openai: { apiKey: "k", baseURL: `${url}/v1` },
        anthropic: { apiKey: "k", baseURL: url },
        env: {},
      });
      const result = await unreachable.complete(model, context([user("hi")]));
      expect(result.error?.kind).toBe("retryable");
    });

    test("a missing key is a non-retryable result, not a throw", async () => {
      const result = await createProvider({ env: {} }).complete(model, context([user("hi")]));
      expect(result.error?.kind).toBe("non_retryable");
      expect(result.error?.message).toMatch(/No API key/);
    });

    test("abort mid-stream cancels the request and keeps the partial text", async () => {
      server.addFaults([{ kind: "slow", tokensPerSecond: 50 }]);
      const controller = new AbortController();
      const progress: number[] = [];
      const result = await provider().complete(model, context([user("[scenario:slow] go")]), {
        signal: controller.signal,
        onProgress: (p) => {
          progress.push(p.textChars);
          if (p.textChars > 0) controller.abort();
        },
      });
      expect(result.message.stopReason).toBe("aborted");
      expect(result.error?.kind).toBe("aborted");
      const partial = textOf(result.message);
      expect(partial.length).toBeGreaterThan(0);
      expect("one two three four five six seven eight nine ten eleven twelve thirteen fourteen").toContain(
        partial,
      );
      expect(partial.length).toBeLessThan(40);
      await sleep(100);
      expect(server.journal()[0]?.outcome).toBe("client_closed");
    });
  });
});

describe("a conversation moves between providers", () => {
  test("Responses → Anthropic → Chat Completions with tool calls and thinking", async () => {
    const provider = providerFor();
    const tools = [READ_TOOL, LS_TOOL];
    const history: Message[] = [user("[scenario:tools] inspect")];
    const responses = resolveModel("local-responses");
    const anthropic = resolveModel("local-anthropic");
    const chat = resolveModel("local-chat");

    const first = await provider.complete(responses, context(history, tools), { thinkingLevel: "low" });
    const firstCall = first.message.content.find((block) => block.type === "toolCall");
    expect(firstCall?.id).toMatch(/^call_[0-9a-f]+_0\|fc_[0-9a-f]+_0$/);
    history.push(first.message, toolResult(firstCall!.id, "read", "contents of a"));

    server.clearJournal();
    const second = await provider.complete(anthropic, context(history, tools));
    expect(second.error).toBeUndefined();
    expect(server.journal()[0]?.turn).toBe(1);
    const secondCalls = second.message.content.filter((block) => block.type === "toolCall");
    expect(secondCalls).toHaveLength(2);
    history.push(
      second.message,
      toolResult(secondCalls[0]!.id, "read", "contents of b"),
      toolResult(secondCalls[1]!.id, "ls", "main.ts"),
    );

    const third = await provider.complete(chat, context(history, tools));
    expect(third.error).toBeUndefined();
    expect(textOf(third.message)).toBe("Last result: main.ts");
  });
});

describe("model catalog", () => {
  test("every local model points at its API", () => {
    for (const api of APIS) expect(resolveModel(MODEL_OF_API[api]).api).toBe(api);
  });

  test("unknown models are a configuration error", () => {
    expect(() => resolveModel("no-such-model")).toThrow(/Unknown model "no-such-model"/);
  });

  test("text-written tool calls become tool calls only for models that opt in", async () => {
    const base = resolveModel("local-chat");
    const provider = providerFor();
    const ask = (model: ModelInfo) =>
      provider.complete(model, context([user("[scenario:textual] go")], [READ_TOOL]));
    const parsed = await ask({ ...base, textToolCalls: true });
    expect(parsed.message.stopReason).toBe("toolUse");
    expect(parsed.message.content.at(-1)).toMatchObject({
      type: "toolCall",
      name: "read",
      arguments: { path: "x.ts" },
    });
    const plain = await ask(base);
    expect(plain.message.stopReason).toBe("stop");
    expect(plain.message.content.map((block) => block.type)).toEqual(["text"]);
  });

  test("a catalog model's own baseUrl wins over the provider's", async () => {
    const custom: ModelInfo = { ...resolveModel("local-chat"), id: "custom", baseUrl: server.openaiBaseURL };
    const provider = createProvider({
      openai: { apiKey: "k", baseURL: "http://127.0.0.1:1/v1" },
      env: {},
      catalog: loadCatalog({ extra: [custom] }),
    });
    const result = await provider.complete(custom, context([user("via model url")]));
    expect(textOf(result.message)).toBe("You said: via model url");
  });
});
