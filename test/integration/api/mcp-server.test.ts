/**
 * Keel as an MCP server (`/mcp`) on the real stack (Temporal, S3, worker, local LLM server),
 * served over HTTP by the API's Node server: the official SDK's client drives a task end to end
 * (the model writes a file through a tool call; the diff and the transcript show it), the MCP
 * Inspector's CLI mode lists the tools and calls one as an independent client, requests without
 * a tenant's key are refused before any MCP handling, another tenant's session is not found
 * through the tools, and bad arguments are clear errors.
 */
import { execFile } from "node:child_process";
import type { Server } from "node:http";
import * as path from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startApiServer } from "../../../src/api/server";
import { uniqueName } from "../../support/integration-env";
import { expectIntactSession } from "../../support/run-harness";
import { tarGzOf } from "../../support/tar-fixture";
import { type ApiStage, createApiStage, PROBLEM_JSON } from "./api-stage";
import { configureLambda, invoke } from "./lambda-events";

const run = promisify(execFile);
/** The Inspector's CLI mode; run in its own folder, where it finds its package.json to name itself. */
const INSPECTOR_CLI = path.join(__dirname, "../../../node_modules/@modelcontextprotocol/inspector-cli/build");
const TOOLS = [
  "abort_run",
  "answer_approval",
  "get_diff",
  "get_run",
  "get_transcript",
  "list_sessions",
  "send_message",
  "start_task",
  "wait_for_run",
];

let api: ApiStage;
let server: Server;
let mcpUrl: URL;
const clients: Client[] = [];

beforeAll(async () => {
  api = await createApiStage();
  configureLambda(api);
  const started = await startApiServer(api.app, 0);
  server = started.server as Server;
  mcpUrl = new URL(`http://127.0.0.1:${started.port}/mcp`);
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await api?.close();
});

/** An SDK client connected to `/mcp` with `key` as its bearer token. */
async function connect(key: string): Promise<Client> {
  const client = new Client({ name: "keel-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(mcpUrl, {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

const textOf = (result: CallToolResult) =>
  result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n");

/** A task whose model writes `notes/hello.txt` through the `write` tool, then answers: its text. */
function writingTaskText(): string {
  const scenario = uniqueName("mcp-write");
  api.stage.llm.addScenario(scenario, {
    turns: [
      {
        text: "Writing the note.",
        toolCalls: [
          { name: "write", arguments: { path: "notes/hello.txt", content: "hello from the model\n" } },
        ],
      },
    ],
    after: { text: "Wrote notes/hello.txt." },
  });
  return `[scenario:${scenario}] write a note`;
}

async function startWritingTask(client: Client): Promise<{ sessionId: string; runId: string }> {
  const started = await callTool(client, "start_task", { text: writingTaskText(), limits: { maxTurns: 5 } });
  expect(started.isError).toBeFalsy();
  const answer = started.structuredContent as { sessionId: string; runId: string; delivery: string };
  expect(answer.delivery).toBe("started");
  return answer;
}

/** wait_for_run until it answers something else than `running` (each call waits up to 20 s). */
async function waitForRun(client: Client, sessionId: string) {
  for (let attempt = 0; attempt < 4; attempt += 1) {
    const waited = await callTool(client, "wait_for_run", { sessionId, timeoutSeconds: 20 });
    expect(waited.isError).toBeFalsy();
    const answer = waited.structuredContent as {
      outcome: string;
      session: { status: string; run: { runId: string; status: string } };
    };
    if (answer.outcome !== "running") return answer;
  }
  throw new Error(`${sessionId}: still running`);
}

test("the SDK client starts a task, waits for it, reads its diff and transcript, and steers it", async () => {
  const client = await connect(api.keys.a);
  const { tools } = await client.listTools();
  expect(tools.map((tool) => tool.name).sort()).toEqual(TOOLS);
  for (const tool of tools) {
    expect(tool.description?.length).toBeGreaterThan(40);
    expect(tool.inputSchema.type).toBe("object");
  }
  // start_task's schema is the message route's: the catalog's models, the workspace sources.
  const startTask = tools.find((tool) => tool.name === "start_task");
  expect(Object.keys(startTask?.inputSchema.properties ?? {})).toEqual(
    expect.arrayContaining(["text", "sessionId", "workspace", "model", "limits", "agents", "network"]),
  );
  expect(startTask?.inputSchema.required).toEqual(["text"]);

  const { sessionId, runId } = await startWritingTask(client);
  const ended = await waitForRun(client, sessionId);
  expect(ended.outcome).toBe("ended");
  expect(ended.session.run).toMatchObject({ runId, status: "completed" });

  const diff = await callTool(client, "get_diff", { sessionId });
  expect(diff.isError).toBeFalsy();
  expect(diff.structuredContent).toMatchObject({
    sessionId,
    baseEntryId: null,
    files: [
      { path: "notes", change: "added", type: "dir" },
      { path: "notes/hello.txt", change: "added", type: "file" },
    ],
    truncated: false,
  });
  expect(textOf(diff)).toContain("+++ b/notes/hello.txt");
  expect(textOf(diff)).toContain("+hello from the model");

  const transcript = await callTool(client, "get_transcript", { sessionId });
  expect(transcript.isError).toBeFalsy();
  const text = textOf(transcript);
  expect(text).toContain("write a note");
  expect(text).toMatch(/→ write .*notes\/hello\.txt/);
  expect(text).toContain("Wrote notes/hello.txt.");
  expect(transcript.structuredContent).toMatchObject({ sessionId, status: "idle" });

  // A follow-up to the idle session starts its next run, which sees the first one's history.
  const followUp = await callTool(client, "send_message", { sessionId, text: "thanks" });
  expect(followUp.isError).toBeFalsy();
  expect(followUp.structuredContent).toMatchObject({ sessionId, delivery: "started" });
  const second = await waitForRun(client, sessionId);
  expect(second.session.run.status).toBe("completed");
  expect(second.session.run.runId).not.toBe(runId);
  expect(textOf(await callTool(client, "get_transcript", { sessionId }))).toContain("thanks");

  const listed = await callTool(client, "list_sessions", { limit: 1000 });
  const ids = (listed.structuredContent as { sessions: Array<{ sessionId: string }> }).sessions.map(
    (session) => session.sessionId,
  );
  expect(ids).toContain(sessionId);

  const entries = await expectIntactSession(api.stage, { tenantId: api.tenants.a, sessionId });
  expect(entries.filter((entry) => entry.type === "message")).toHaveLength(6);
}, 90_000);

/** A session imported with files (a session archive): a user message, an answer, and the workspace. */
async function importedSessionWithFiles(scenario: string, files: Record<string, string>): Promise<string> {
  const line = (entry: Record<string, unknown>) => JSON.stringify(entry);
  const zeroUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 };
  const jsonl = [
    line({ type: "session", version: 3, id: "imported", timestamp: "2026-01-05T10:00:00.000Z", cwd: "" }),
    line({
      type: "message",
      id: "u1",
      parentId: null,
      timestamp: "2026-01-05T10:00:01.000Z",
      message: {
        role: "user",
        content: [{ type: "text", text: `[scenario:${scenario}] a project` }],
        timestamp: 0,
      },
    }),
    line({
      type: "message",
      id: "a1",
      parentId: "u1",
      timestamp: "2026-01-05T10:00:02.000Z",
      message: {
        role: "assistant",
        content: [{ type: "text", text: "Ready." }],
        api: "openai-completions",
        provider: "openai",
        model: "local-chat",
        usage: { ...zeroUsage, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
        stopReason: "stop",
        timestamp: 0,
      },
    }),
  ].join("\n");
  const archive = tarGzOf([
    { path: "session.jsonl", body: `${jsonl}\n` },
    ...Object.entries(files).map(([name, body]) => ({ path: `workspace/${name}`, body })),
  ]);
  const imported = await api.call("POST", "/v1/sessions/import", {
    body: archive as unknown as string,
    headers: { "content-type": "application/gzip" },
  });
  expect(imported.status).toBe(201);
  expect(imported.body.workspace.files).toBe(Object.keys(files).length);
  return imported.body.sessionId as string;
}

test("start_task continues an existing session with files: the diff shows the edit, the deletion and a binary change against them, and bounds what it computes", async () => {
  const client = await connect(api.keys.a);
  const scenario = uniqueName("mcp-edit");
  api.stage.llm.addScenario(scenario, {
    turns: [
      { text: "(the imported answer)" },
      {
        toolCalls: [
          { name: "edit", arguments: { path: "README.md", oldText: "old line", newText: "new line" } },
          { name: "bash", arguments: { command: "rm obsolete.txt && printf 'a\\000c' > data.bin" } },
          // Every line moved: a line diff of these costs lines × differences, far past its time bound.
          { name: "bash", arguments: { command: "tac numbers.txt > reversed && mv reversed numbers.txt" } },
          { name: "bash", arguments: { command: "head -c 2000000 /dev/zero | tr '\\0' x > big.txt" } },
        ],
      },
    ],
    after: { text: "Edited." },
  });
  const sessionId = await importedSessionWithFiles(scenario, {
    "README.md": "# Project\nold line\nkept\n",
    "obsolete.txt": "remove me\n",
    "same.txt": "untouched\n",
    "data.bin": "a\u0000b",
    "numbers.txt": Array.from({ length: 40_000 }, (_, i) => `${i + 1}\n`).join(""),
  });
  const started = await callTool(client, "start_task", { sessionId, text: "update the readme" });
  expect(started.structuredContent).toMatchObject({ sessionId, delivery: "started" });
  expect((await waitForRun(client, sessionId)).session.run.status).toBe("completed");

  const diff = await callTool(client, "get_diff", { sessionId });
  const answer = diff.structuredContent as { baseEntryId: string | null; files: unknown[]; patch: string };
  expect(answer.baseEntryId).toBe("a1");
  expect(answer.files).toHaveLength(5);
  expect(answer.files).toEqual(
    expect.arrayContaining([
      { path: "obsolete.txt", change: "deleted", type: "file" },
      { path: "data.bin", change: "modified", type: "file", omitted: "binary" },
      { path: "README.md", change: "modified", type: "file" },
      { path: "numbers.txt", change: "modified", type: "file", omitted: "too-complex" },
      { path: "big.txt", change: "added", type: "file", omitted: "too-large" },
    ]),
  );
  expect(answer.patch).toContain(
    "diff a/numbers.txt b/numbers.txt\n(too many differences to compute: lines not shown)",
  );
  expect(answer.patch).toContain("diff a/big.txt b/big.txt\n(too large: lines not shown)");
  expect(answer.patch).toContain("diff a/data.bin b/data.bin\n(binary: lines not shown)");
  expect(answer.patch).toContain("--- a/README.md\n+++ b/README.md");
  expect(answer.patch).toContain("-old line\n+new line\n");
  expect(answer.patch).toContain("--- a/obsolete.txt\n+++ /dev/null");
  expect(answer.patch).not.toContain("same.txt");
  await expectIntactSession(api.stage, { tenantId: api.tenants.a, sessionId });
}, 60_000);

test("approvals and aborts through the tools; a start retried with its idempotency key starts nothing again", async () => {
  const client = await connect(api.keys.a);
  const idempotencyKey = uniqueName("mcp-start");
  const body = { ...api.waitingRunBody(), idempotencyKey };
  const first = await callTool(client, "start_task", body);
  const again = await callTool(client, "start_task", body);
  expect(again.structuredContent).toEqual(first.structuredContent);
  const { sessionId, runId } = first.structuredContent as { sessionId: string; runId: string };

  const waiting = await waitForRun(client, sessionId);
  expect(waiting.outcome).toBe("waiting_approval");
  const [pending] = (waiting.session.run as unknown as { pendingToolCalls: Array<{ toolCallId: string }> })
    .pendingToolCalls;
  // A second task in a session whose run is live is refused (steer it instead).
  expect(textOf(await callTool(client, "start_task", { sessionId, text: "another" }))).toContain(
    "409 run-busy",
  );
  const approved = await callTool(client, "answer_approval", {
    sessionId,
    toolCallId: pending?.toolCallId,
    decision: "approve",
  });
  expect(approved.structuredContent).toEqual({ accepted: true });
  const ended = await waitForRun(client, sessionId);
  expect(ended.session.run).toMatchObject({ runId, status: "completed" });

  const second = await callTool(client, "start_task", api.waitingRunBody());
  const other = (second.structuredContent as { sessionId: string }).sessionId;
  expect((await waitForRun(client, other)).outcome).toBe("waiting_approval");
  const aborted = await callTool(client, "abort_run", { sessionId: other, reason: "not needed" });
  expect(aborted.structuredContent).toMatchObject({ accepted: true });
  expect((await waitForRun(client, other)).session.run.status).toBe("aborted");
  for (const id of [sessionId, other])
    await expectIntactSession(api.stage, { tenantId: api.tenants.a, sessionId: id });
}, 60_000);

test("the MCP Inspector's CLI drives a task end to end (start, wait, read the diff) with the tenant's key, and is refused without it", async () => {
  const inspector = (...args: string[]) =>
    run(process.execPath, ["index.js", mcpUrl.href, "--transport", "http", ...args], {
      cwd: INSPECTOR_CLI,
      timeout: 30_000,
    });
  const bearer = ["--header", `Authorization: Bearer ${api.keys.a}`];
  const listed = JSON.parse((await inspector("--method", "tools/list", ...bearer)).stdout) as {
    tools: Array<{ name: string }>;
  };
  expect(listed.tools.map((tool) => tool.name).sort()).toEqual(TOOLS);

  const call = async (tool: string, ...args: string[]) => {
    const toolArgs = args.flatMap((arg) => ["--tool-arg", arg]);
    const { stdout } = await inspector("--method", "tools/call", "--tool-name", tool, ...toolArgs, ...bearer);
    const result = JSON.parse(stdout) as CallToolResult;
    expect({ tool, isError: result.isError ?? false }).toEqual({ tool, isError: false });
    return result.structuredContent as Record<string, unknown>;
  };
  const started = await call("start_task", `text=${writingTaskText()}`);
  expect(started).toMatchObject({ delivery: "started" });
  const sessionId = String(started.sessionId);
  let waited: Record<string, unknown> = {};
  for (let attempt = 0; attempt < 4 && waited.outcome !== "ended"; attempt += 1) {
    waited = await call("wait_for_run", `sessionId=${sessionId}`, "timeoutSeconds=20");
  }
  expect(waited).toMatchObject({ outcome: "ended", session: { run: { status: "completed" } } });
  const diff = await call("get_diff", `sessionId=${sessionId}`);
  expect(diff.files).toEqual([
    { path: "notes", change: "added", type: "dir" },
    { path: "notes/hello.txt", change: "added", type: "file" },
  ]);
  expect(diff.patch).toContain("+hello from the model");
  await expectIntactSession(api.stage, { tenantId: api.tenants.a, sessionId });

  const refused = await inspector("--method", "tools/list").catch(
    (error: { code: number; stderr: string }) => error,
  );
  expect("code" in refused && refused.code).not.toBe(0);
  expect(String((refused as { stderr: string }).stderr)).toMatch(/401/);
}, 60_000);

test("the Lambda handler serves the same endpoint (API Gateway v2 events): a task started and followed to its end", async () => {
  let id = 0;
  const rpc = async (method: string, params: Record<string, unknown>, key: string | null = api.keys.a) => {
    id += 1;
    const answer = await invoke({
      method: "POST",
      path: "/mcp",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(key !== null ? { authorization: `Bearer ${key}` } : {}),
      },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });
    return { status: answer.status, body: JSON.parse(answer.body) };
  };
  const listed = await rpc("tools/list", {});
  expect(listed.status).toBe(200);
  expect(listed.body.result.tools.map((tool: { name: string }) => tool.name).sort()).toEqual(TOOLS);
  expect((await rpc("tools/list", {}, null)).status).toBe(401);

  const started = await rpc("tools/call", { name: "start_task", arguments: { text: "via lambda" } });
  const { sessionId, delivery } = started.body.result.structuredContent;
  expect(delivery).toBe("started");
  const waited = await rpc("tools/call", {
    name: "wait_for_run",
    arguments: { sessionId, timeoutSeconds: 20 },
  });
  expect(waited.body.result.structuredContent).toMatchObject({
    outcome: "ended",
    session: { run: { status: "completed" } },
  });
  await expectIntactSession(api.stage, { tenantId: api.tenants.a, sessionId });
}, 60_000);

test("/mcp answers 401 before any MCP handling without a tenant's key, and another tenant's session is not found", async () => {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } },
  };
  for (const authorization of [undefined, "Bearer not-a-key", `Basic ${api.keys.a}`]) {
    const response = await fetch(mcpUrl, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(authorization ? { authorization } : {}),
      },
      body: JSON.stringify(initialize),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get("content-type")).toBe(PROBLEM_JSON);
    expect(response.headers.get("www-authenticate")).toContain("Bearer");
  }
  // Stateless: no server stream to open (405, as for any method a path does not serve).
  const stream = await fetch(mcpUrl, { headers: { authorization: `Bearer ${api.keys.a}` } });
  expect(stream.status).toBe(405);
  // Not in the OpenAPI document: the endpoint describes itself (tools/list).
  expect((await api.call("GET", "/v1/openapi.json", { key: null })).body.paths["/mcp"]).toBeUndefined();

  const owner = await connect(api.keys.a);
  const { sessionId } = await startWritingTask(owner);
  await waitForRun(owner, sessionId);
  const stranger = await connect(api.keys.b);
  for (const [name, args] of [
    ["get_run", { sessionId }],
    ["wait_for_run", { sessionId, timeoutSeconds: 1 }],
    ["get_diff", { sessionId }],
    ["get_transcript", { sessionId }],
    ["abort_run", { sessionId }],
    ["answer_approval", { sessionId, toolCallId: "call_1", decision: "approve" }],
  ] as const) {
    const refused = await callTool(stranger, name, args);
    expect({ name, isError: refused.isError, text: textOf(refused) }).toEqual({
      name,
      isError: true,
      text: expect.stringContaining("404 session-not-found"),
    });
  }
  // The stranger's own start with the owner's session id would be a new session of its own tenant.
  const listed = await callTool(stranger, "list_sessions", {});
  expect(JSON.stringify(listed.structuredContent)).not.toContain(sessionId);
  // The owner's session is unchanged: one run, its messages intact.
  await expectIntactSession(api.stage, { tenantId: api.tenants.a, sessionId });
}, 60_000);

test("bad arguments and unknown sessions are clear tool errors, and the server goes on", async () => {
  const client = await connect(api.keys.a);
  /** A refusal, whether the SDK answers it as a tool error or a JSON-RPC error. */
  const refusal = async (name: string, args: Record<string, unknown>) => {
    const outcome = await callTool(client, name, args).catch((error: Error) => error);
    if (outcome instanceof Error) return outcome.message;
    expect({ name, args, isError: outcome.isError }).toEqual({ name, args, isError: true });
    return textOf(outcome);
  };
  expect(await refusal("start_task", {})).toMatch(/text/);
  expect(
    await refusal("start_task", { text: "hi", workspace: { type: "git", url: "ssh://example.com/r" } }),
  ).toMatch(/workspace/);
  expect(await refusal("start_task", { text: "hi", model: "no-such-model" })).toMatch(/model/);
  expect(await refusal("wait_for_run", { sessionId: "s", timeoutSeconds: 500 })).toMatch(/timeoutSeconds/);
  expect(await refusal("get_run", { sessionId: "../etc" })).toMatch(/sessionId/);
  expect(await refusal("answer_approval", { sessionId: "s", toolCallId: "c", decision: "maybe" })).toMatch(
    /decision/,
  );
  expect(await refusal("no_such_tool", {})).toMatch(/no_such_tool/);
  // Well-formed but naming nothing: the API's own problems.
  const unknown = api.sessionId();
  expect(await refusal("get_run", { sessionId: unknown })).toContain(
    "No such session (404 session-not-found)",
  );
  expect(await refusal("get_diff", { sessionId: unknown })).toContain("404 session-not-found");
  expect(
    await refusal("answer_approval", { sessionId: unknown, toolCallId: "call_1", decision: "approve" }),
  ).toContain("404 session-not-found");
  expect(await refusal("abort_run", { sessionId: unknown })).toContain("404 session-not-found");
  // And the server still answers.
  expect((await client.listTools()).tools).toHaveLength(TOOLS.length);
}, 30_000);

test("every worker down while a run waits for approval: the wait answers the 503 problem; once a worker is back the run is approved and ends", async () => {
  const client = await connect(api.keys.a);
  const started = await callTool(client, "start_task", api.waitingRunBody());
  const { sessionId, runId } = started.structuredContent as { sessionId: string; runId: string };
  expect((await waitForRun(client, sessionId)).outcome).toBe("waiting_approval");
  await api.stage.stopWorkers();
  let restarted = false;
  try {
    // The run cannot be read (no worker answers its state query): the wait goes on until its
    // end, then answers the API's 503 problem, which says to retry.
    const unreadable = await callTool(client, "wait_for_run", { sessionId, timeoutSeconds: 1 });
    expect(unreadable.isError).toBe(true);
    expect(textOf(unreadable)).toContain("503 run-not-answering");
    await api.stage.startWorker();
    restarted = true;
  } finally {
    if (!restarted) await api.stage.startWorker();
  }
  const waiting = await waitForRun(client, sessionId);
  expect(waiting.outcome).toBe("waiting_approval");
  const [pending] = (waiting.session.run as unknown as { pendingToolCalls: Array<{ toolCallId: string }> })
    .pendingToolCalls;
  const approved = await callTool(client, "answer_approval", {
    sessionId,
    toolCallId: pending?.toolCallId,
    decision: "approve",
  });
  expect(approved.structuredContent).toEqual({ accepted: true });
  const ended = await waitForRun(client, sessionId);
  expect(ended).toMatchObject({ outcome: "ended", session: { run: { runId, status: "completed" } } });
  await expectIntactSession(api.stage, { tenantId: api.tenants.a, sessionId });
}, 90_000);
