/**
 * Keel's providers and a full run against llm-mock-api (PyPI), a mock server Keel's authors did
 * not write: the three wire APIs, streaming on and off, text, a tool call then an answer, and
 * two tool calls at once; then runs whose bash call comes from that server.
 */
import type { LlmContext, Message, ToolSpec } from "../../../src/core/messages";
import { resolveModel } from "../../../src/providers/models";
import { createProvider } from "../../../src/providers/registry";
import type { ModelApi } from "../../../src/providers/types";
import {
  LLM_MOCK_API_INSTALL_TIMEOUT_MS,
  type LlmMockApi,
  startLlmMockApi,
} from "../../support/llm-mock-api";
import { createRunStage, messagesOf, type RunStage } from "../../support/run-harness";

jest.setTimeout(120_000);

const MODEL_OF_API: Record<ModelApi, string> = {
  "openai-completions": "local-chat",
  "openai-responses": "local-responses",
  "anthropic-messages": "local-anthropic",
};
const APIS = Object.keys(MODEL_OF_API) as ModelApi[];
const CASES = APIS.flatMap((api) => [true, false].map((stream) => ({ api, stream })));
const TOOLS: ToolSpec[] = ["bash", "ls"].map((name) => ({
  name,
  description: name,
  parameters: { type: "object", properties: {} },
}));

const keyword = (api: string, stream: boolean, what: string) => `${api}-${stream ? "sse" : "json"}-${what}`;

/** Rules: one set per API and stream mode, since sequences advance per request. */
function rules() {
  const perCase = [...CASES, ...APIS.map((api) => ({ api, stream: "run" as const }))].flatMap(
    ({ api, stream }) => {
      const key = (what: string) => (stream === "run" ? `${api}-run-${what}` : keyword(api, stream, what));
      return [
        { when: key("text"), reply: "plain answer from the mock" },
        {
          when: key("tool"),
          replies: [
            {
              reply: { text: "running it", tools: [{ name: "bash", args: { command: `echo mock-${api}` } }] },
            },
            "the tool answered",
          ],
        },
        {
          when: key("two"),
          reply: {
            tools: [
              { name: "bash", args: { command: "echo a" } },
              { name: "ls", args: { path: "." } },
            ],
          },
        },
      ];
    },
  );
  // llm-mock-api matches on the last user message; on Anthropic that is the tool_result turn
  // (whose text is the tool output), so the answer after a tool call is matched on the output.
  const afterTool = { when: "/^mock-/", reply: "the tool answered" };
  return { rules: [afterTool, ...perCase], fallback: "no rule matched" };
}

let mock: LlmMockApi;

beforeAll(async () => {
  mock = await startLlmMockApi(rules());
}, LLM_MOCK_API_INSTALL_TIMEOUT_MS);
afterAll(() => mock?.close());

describe.each(CASES)("$api, stream $stream", ({ api, stream }) => {
  const provider = () =>
    createProvider({
      openai: { apiKey: "k", baseURL: mock.openaiBaseURL, stream },
      anthropic: { apiKey: "k", baseURL: mock.anthropicBaseURL, stream },
      env: {},
    });
  const model = () => resolveModel(MODEL_OF_API[api]);
  const ask = (messages: Message[]) => {
    const context: LlmContext = { messages, tools: TOOLS };
    return provider().complete(model(), context);
  };
  const user = (text: string): Message => ({ role: "user", content: text, timestamp: 0 });

  it("answers with text, with usage", async () => {
    const { message, error } = await ask([user(keyword(api, stream, "text"))]);
    expect(error).toBeUndefined();
    expect(message.content).toMatchObject([{ type: "text", text: "plain answer from the mock" }]);
    expect(message.stopReason).toBe("stop");
    expect(message.usage.input).toBeGreaterThan(0);
    expect(message.usage.output).toBeGreaterThan(0);
  });

  it("makes a tool call, then answers once it has the result", async () => {
    const prompt = user(keyword(api, stream, "tool"));
    const first = await ask([prompt]);
    expect(first.error).toBeUndefined();
    expect(first.message.stopReason).toBe("toolUse");
    const call = first.message.content.find((block) => block.type === "toolCall");
    expect(call).toMatchObject({ name: "bash", arguments: { command: `echo mock-${api}` } });
    if (call?.type !== "toolCall") throw new Error("no tool call");
    const second = await ask([
      prompt,
      first.message,
      {
        role: "toolResult",
        toolCallId: call.id,
        toolName: "bash",
        content: [{ type: "text", text: `mock-${api}` }],
        isError: false,
        timestamp: 0,
      },
    ]);
    expect(second.error).toBeUndefined();
    expect(second.message.content).toMatchObject([{ type: "text", text: "the tool answered" }]);
  });

  it("makes two tool calls at once", async () => {
    const { message, error } = await ask([user(keyword(api, stream, "two"))]);
    expect(error).toBeUndefined();
    const calls = message.content.filter((block) => block.type === "toolCall");
    expect(calls).toMatchObject([
      { name: "bash", arguments: { command: "echo a" } },
      { name: "ls", arguments: { path: "." } },
    ]);
    expect(new Set(calls.map((block) => (block.type === "toolCall" ? block.id : ""))).size).toBe(2);
  });
});

describe("full runs against llm-mock-api", () => {
  let stage: RunStage;

  beforeAll(async () => {
    stage = await createRunStage();
    await stage.startWorker({
      OPENAI_BASE_URL: mock.openaiBaseURL,
      ANTHROPIC_BASE_URL: mock.anthropicBaseURL,
    });
  });
  afterAll(() => stage?.close());

  it.each(APIS)("%s: the model's bash call runs and the run completes", async (api) => {
    const ref = stage.newSession();
    await stage.runs.deliver(
      ref,
      { text: `${api}-run-tool`, mode: "auto" },
      stage.settings({ model: MODEL_OF_API[api] }),
    );
    expect((await stage.result(ref)).status).toBe("completed");
    const messages = messagesOf(await stage.entries(ref));
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(messages[2]).toMatchObject({
      role: "toolResult",
      isError: false,
      content: [{ text: expect.stringContaining(`mock-${api}`) }],
    });
    expect(messages[3]).toMatchObject({ content: [{ type: "text", text: "the tool answered" }] });
  });
});
