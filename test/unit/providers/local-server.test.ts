/** The local server through the SDKs' own stream accumulators, its control API and journal. */
import { spawn } from "node:child_process";
import { once } from "node:events";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import type { Message } from "../../../src/core/messages";
import {
  FAULT_HEADER,
  type LocalLlmServer,
  SCENARIO_HEADER,
  startLocalLlmServer,
} from "../../../src/providers/local-server";
import { resolveModel } from "../../../src/providers/models";
import { createProvider } from "../../../src/providers/registry";
import { EMPTY_DIRECTORY_LISTING } from "../../../src/tools/truncate";

let server: LocalLlmServer;
let openai: OpenAI;
let anthropic: Anthropic;

const SCRIPTED = {
  turns: [
    {
      thinking: "Plan first.",
      text: "Calling two tools.",
      toolCalls: [
        { name: "read", arguments: { path: "a" } },
        { name: "ls", arguments: {} },
      ],
    },
  ],
};

beforeAll(async () => {
  server = await startLocalLlmServer({ scenarios: { scripted: SCRIPTED } });
  openai = new OpenAI({ apiKey: "k", baseURL: server.openaiBaseURL, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: "k", baseURL: server.anthropicBaseURL, maxRetries: 0 });
});
afterAll(() => server.close());
beforeEach(() => {
  server.clearJournal();
  server.clearFaults();
});

const http = (path: string, init?: RequestInit) => fetch(`${server.url}${path}`, init);
const post = (path: string, body: unknown) =>
  http(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

describe("SSE sequences accepted by the SDKs' own accumulators", () => {
  test("Anthropic messages.stream().finalMessage()", async () => {
    const message = await anthropic.messages
      .stream({
        model: "local-anthropic",
        max_tokens: 1000,
        thinking: { type: "enabled", budget_tokens: 1024 },
        messages: [{ role: "user", content: "[scenario:scripted] go" }],
      })
      .finalMessage();
    expect(message.content.map((block) => block.type)).toEqual(["thinking", "text", "tool_use", "tool_use"]);
    expect(message.content[0]).toMatchObject({
      thinking: "Plan first.",
      signature: expect.stringMatching(/^sig_/),
    });
    expect(message.content[2]).toMatchObject({ name: "read", input: { path: "a" } });
    expect(message.stop_reason).toBe("tool_use");
  });

  test("OpenAI chat.completions.stream().finalChatCompletion()", async () => {
    const completion = await openai.chat.completions
      .stream({ model: "local-chat", messages: [{ role: "user", content: "[scenario:scripted] go" }] })
      .finalChatCompletion();
    const message = completion.choices[0]!.message;
    expect(message.content).toBe("Calling two tools.");
    expect(
      message.tool_calls?.map(
        (call) => call.type === "function" && [call.function.name, call.function.arguments],
      ),
    ).toEqual([
      ["read", '{"path":"a"}'],
      ["ls", "{}"],
    ]);
    expect(completion.choices[0]!.finish_reason).toBe("tool_calls");
  });

  test("OpenAI responses.stream().finalResponse()", async () => {
    const response = await openai.responses
      .stream({ model: "local-responses", input: "[scenario:scripted] go", reasoning: { effort: "low" } })
      .finalResponse();
    expect(response.output.map((item) => item.type)).toEqual([
      "reasoning",
      "message",
      "function_call",
      "function_call",
    ]);
    expect(response.output_text).toBe("Calling two tools.");
  });
});

describe("determinism", () => {
  const messages: Message[] = [{ role: "user", content: "[scenario:scripted] go", timestamp: 1 }];

  test("a retried call gets the same answer, ids included, after a transient fault", async () => {
    const provider = createProvider({ openai: { apiKey: "k", baseURL: server.openaiBaseURL }, env: {} });
    const model = resolveModel("local-responses");
    const first = await provider.complete(model, { messages });
    server.addFaults([{ kind: "rate_limit" }]);
    const failed = await provider.complete(model, { messages });
    const retried = await provider.complete(model, { messages });
    expect(failed.error?.kind).toBe("retryable");
    expect({ ...retried.message, timestamp: 0 }).toEqual({ ...first.message, timestamp: 0 });
    const journal = server.journal();
    expect(journal.map((entry) => [entry.status, entry.turn])).toEqual([
      [200, 0],
      [429, 0],
      [200, 0],
    ]);
    expect(new Set(journal.map((entry) => entry.digest)).size).toBe(1);
  });

  test("the scenario header overrides the marker", async () => {
    const completion = await openai.chat.completions.create(
      { model: "local-chat", messages: [{ role: "user", content: "plain" }] },
      { headers: { [SCENARIO_HEADER]: "scripted" } },
    );
    expect(completion.choices[0]!.message.content).toBe("Calling two tools.");
  });
});

describe("control API and journal over HTTP", () => {
  test("scenarios loaded at run time are played; unknown ones are a 400", async () => {
    const loaded = await post("/_scenarios", {
      runtime: { turns: [{ text: "turn {{turn}}: {{lastUser}}" }] },
    });
    expect(loaded.status).toBe(200);
    const completion = await openai.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "[scenario:runtime] hi there" }],
    });
    expect(completion.choices[0]!.message.content).toBe("turn 0: hi there");
    await expect(
      openai.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "[scenario:nope] x" }],
      }),
    ).rejects.toMatchObject({ status: 400 });
    expect((await post("/_scenarios", { "bad name": { turns: [] } })).status).toBe(400);
  });

  test("faults loaded at run time fire the given number of times, then stop", async () => {
    expect((await post("/_faults", { faults: [{ kind: "server_error", times: 2 }] })).status).toBe(200);
    const ask = () =>
      openai.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] });
    await expect(ask()).rejects.toMatchObject({ status: 500 });
    await expect(ask()).rejects.toMatchObject({ status: 500 });
    await expect(ask()).resolves.toBeDefined();
    expect((await post("/_faults", { faults: [{ kind: "volcano" }] })).status).toBe(400);
  });

  test("rate-based faults are reproducible with a seed", async () => {
    const pattern = async () => {
      const seeded = await startLocalLlmServer({ seed: 42, faults: [{ kind: "overloaded", rate: 0.5 }] });
      const client = new Anthropic({ apiKey: "k", baseURL: seeded.anthropicBaseURL, maxRetries: 0 });
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        statuses.push(
          await client.messages
            .create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "x" }] })
            .then(() => 200)
            .catch((error: { status: number }) => error.status),
        );
      }
      await seeded.close();
      return statuses;
    };
    const first = await pattern();
    expect(first).toEqual(await pattern());
    expect(first).toContain(529);
    expect(first).toContain(200);
  });

  test("a per-request fault header and injected latency", async () => {
    await expect(
      anthropic.messages.create(
        { model: "m", max_tokens: 10, messages: [{ role: "user", content: "x" }] },
        { headers: { [FAULT_HEADER]: "context_overflow" } },
      ),
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("prompt is too long") });
    server.addFaults([{ kind: "slow", latencyMs: 150 }]);
    const started = Date.now();
    await anthropic.messages.create({
      model: "m",
      max_tokens: 10,
      messages: [{ role: "user", content: "x" }],
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  test("GET and DELETE /_journal", async () => {
    await anthropic.messages.create({
      model: "local-anthropic",
      max_tokens: 10,
      messages: [{ role: "user", content: "x" }],
    });
    const { entries } = (await (await http("/_journal")).json()) as { entries: Record<string, unknown>[] };
    expect(entries).toEqual([
      expect.objectContaining({
        path: "/v1/messages",
        model: "local-anthropic",
        scenario: "default",
        turn: 0,
        stream: false,
        status: 200,
        outcome: "completed",
        digest: expect.stringMatching(/^[0-9a-f]{16}$/),
        time: expect.any(String),
      }),
    ]);
    expect((await http("/_journal", { method: "DELETE" })).status).toBe(200);
    expect(server.journal()).toEqual([]);
  });
});

describe("demo scenario", () => {
  test("lists, reads, edits and answers, driven by the tool results it gets", async () => {
    const provider = createProvider({
      anthropic: { apiKey: "k", baseURL: server.anthropicBaseURL },
      env: {},
    });
    const model = resolveModel("local-anthropic");
    const history: Message[] = [
      { role: "user", content: "[scenario:demo] Add a note to the readme", timestamp: 1 },
    ];
    const toolOutputs: Record<string, string> = {
      ls: "src/\npackage.json\nREADME.md",
      read: "# Sample project\n\nA tiny project.",
      edit: "Successfully replaced 1 block in README.md.",
    };
    const calls: [string, unknown][] = [];
    for (let turn = 0; turn < 4; turn++) {
      const { message } = await provider.complete(model, { messages: history });
      history.push(message);
      for (const block of message.content) {
        if (block.type !== "toolCall") continue;
        calls.push([block.name, block.arguments]);
        history.push({
          role: "toolResult",
          toolCallId: block.id,
          toolName: block.name,
          content: [{ type: "text", text: toolOutputs[block.name]! }],
          isError: false,
          timestamp: 1,
        });
      }
    }
    expect(calls).toEqual([
      ["ls", { path: "." }],
      ["read", { path: "README.md" }],
      [
        "edit",
        {
          path: "README.md",
          oldText: "# Sample project",
          newText: expect.stringContaining("# Sample project\n\n> "),
        },
      ],
    ]);
    const answer = history.at(-1)!;
    expect(answer.role === "assistant" && answer.stopReason).toBe("stop");
    expect(JSON.stringify(answer)).toContain("Successfully replaced 1 block in README.md.");
  });

  test("an empty workspace: it says so after the listing and reads nothing", async () => {
    const provider = createProvider({
      anthropic: { apiKey: "k", baseURL: server.anthropicBaseURL },
      env: {},
    });
    const model = resolveModel("local-anthropic");
    const history: Message[] = [
      { role: "user", content: "[scenario:demo] Add a note to the readme", timestamp: 1 },
    ];
    const first = (await provider.complete(model, { messages: history })).message;
    history.push(first);
    const call = first.content.find((block) => block.type === "toolCall");
    expect(call?.type === "toolCall" && call.name).toBe("ls");
    history.push({
      role: "toolResult",
      toolCallId: call?.type === "toolCall" ? call.id : "",
      toolName: "ls",
      content: [{ type: "text", text: EMPTY_DIRECTORY_LISTING }],
      isError: false,
      timestamp: 1,
    });
    const second = (await provider.complete(model, { messages: history })).message;
    expect(second.content.filter((block) => block.type === "toolCall")).toEqual([]);
    expect(JSON.stringify(second.content)).toContain("The workspace is empty");
  });
});

test("the CLI prints its URL and serves requests", async () => {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "src/providers/local-server/main.ts", "--port", "0"],
    {
      cwd: `${__dirname}/../../..`,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  try {
    const [chunk] = (await once(child.stdout, "data")) as [Buffer];
    const url = chunk.toString().trim();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await (await fetch(`${url}/_health`)).json()).toEqual({ ok: true });
  } finally {
    child.kill("SIGTERM");
    await once(child, "exit");
  }
}, 20_000);
