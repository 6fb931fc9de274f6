/**
 * MCP tool servers in runs, through the real Temporal and S3 servers, with the local LLM server
 * calling their tools by scenario: server-everything (text, an image, structured content,
 * progress), server-filesystem confined to the workspace, mcp-server-time (Python); a server that
 * crashes mid-call, one that is too slow (timeout), an abort during a call, a call behind `ask`,
 * the tool list across continue-as-new, a server down at start, and a server whose tool list
 * changes during the run, server-everything as a Streamable HTTP server, and the read-only hook.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "@temporalio/worker";
import { type RunSettings, runWorkflowId } from "../../../src/contracts/runs";
import type { AgentEvent } from "../../../src/core/events";
import { SecretStore } from "../../../src/tenants/secrets";
import { workspaceFor } from "../../../src/tools/workspace";
import { LocalKeyWrapper } from "../../../src/vault/key-wrapper";
import { forwardHttp } from "../../support/forward-http";
import { startHttpsStandIn } from "../../support/https-stand-in";
import {
  s3Client,
  s3Settings,
  testTmpDir,
  uniqueName,
  workflowBundlePath,
} from "../../support/integration-env";
import {
  changingServer,
  crashingEverythingServer,
  everythingServer,
  filesystemServer,
  MCP_WORKER_ENV,
  startEverythingHttp,
  timeServer,
} from "../../support/mcp-servers";
import {
  createRunStage,
  eventually,
  expectIntactSession,
  messagesOf,
  type RunStage,
} from "../../support/run-harness";

let stage: RunStage;

beforeAll(async () => {
  stage = await createRunStage();
  await stage.startWorker(MCP_WORKER_ENV);
});

afterAll(async () => {
  await stage?.close();
});

/** The vault of this file's tenant: one key (its data key is wrapped once), written where a worker reads it. */
const vaultKey = randomBytes(32);
function tenantVault() {
  const keyFile = join(testTmpDir(), `${uniqueName("vault")}.key`);
  writeFileSync(keyFile, vaultKey.toString("base64"), { mode: 0o600 });
  return { keyFile, vault: new SecretStore(s3Client(), s3Settings(), new LocalKeyWrapper(vaultKey)) };
}

type Call = { name: string; arguments: Record<string, unknown> };

/** Starts a run whose model makes `calls` (one turn, in parallel) and then answers with the last result. */
async function runCalling(name: string, calls: Call[], settings: Partial<RunSettings>) {
  stage.llm.addScenario(name, {
    turns: [{ toolCalls: calls }],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const ref = stage.newSession();
  await stage.runs.deliver(ref, { text: `[scenario:${name}] go`, mode: "auto" }, stage.settings(settings));
  return ref;
}

function toolResults(entries: Awaited<ReturnType<RunStage["entries"]>>) {
  return messagesOf(entries).flatMap((message) => (message.role === "toolResult" ? [message] : []));
}

function textOf(result: { content: { type: string; text?: string }[] }): string {
  return result.content.flatMap((block) => (block.type === "text" ? [block.text ?? ""] : [])).join("\n");
}

async function allEvents(ref: { tenantId: string; sessionId: string }): Promise<AgentEvent[]> {
  return stage.runs.events(ref, 0);
}

test("server-everything: text, an image and structured content come back as tool results; the model saw the tools with their schemas", async () => {
  const ref = await runCalling(
    "mcp-everything",
    [
      { name: "everything__echo", arguments: { message: "hello mcp" } },
      { name: "everything__get-sum", arguments: { a: 2, b: 40 } },
      { name: "everything__get-tiny-image", arguments: {} },
      { name: "everything__get-structured-content", arguments: { location: "Chicago" } },
    ],
    { mcpServers: [everythingServer()] },
  );
  expect((await stage.result(ref)).status).toBe("completed");
  const results = toolResults(await expectIntactSession(stage, ref));
  expect(results.map((result) => result.isError)).toEqual([false, false, false, false]);
  expect(textOf(results[0]!)).toBe("Echo: hello mcp");
  expect(textOf(results[1]!)).toContain("42");
  expect(results[2]!.content.some((block) => block.type === "image" && block.mimeType === "image/png")).toBe(
    true,
  );
  expect(results[3]!.details).toMatchObject({ structuredContent: { conditions: expect.any(String) } });

  const request = stage.llm.journal().find((entry) => entry.scenario === "mcp-everything")?.body as {
    tools?: { function?: { name: string; parameters: { properties?: Record<string, unknown> } } }[];
  };
  const echo = request.tools?.find((tool) => tool.function?.name === "everything__echo");
  expect(echo?.function?.parameters.properties).toHaveProperty("message");
  expect(request.tools?.map((tool) => tool.function?.name)).toContain("bash");
  // What the run saw is recorded as the listing activity's result.
  const history = await stage.client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
  const listed = (history.events ?? []).filter(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === "listMcpTools",
  );
  expect(listed).toHaveLength(1);
  // The tools ride in the history once (the listing's result); model calls name them by digest.
  const turnInputs = (history.events ?? []).flatMap((event) => {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name !== "llmTurn") return [];
    return [Buffer.from(scheduled.input?.payloads?.[0]?.data ?? new Uint8Array()).toString()];
  });
  expect(turnInputs.length).toBeGreaterThanOrEqual(2);
  for (const input of turnInputs) {
    expect(input).toContain('"mcpToolRefs":[{"server":"everything","digest":"');
    expect(input).not.toContain("inputSchema");
  }
});

test("server-filesystem is confined to the workspace; mcp-server-time (Python) answers", async () => {
  const ref = await runCalling(
    "mcp-fs-time",
    [
      { name: "fs__write_file", arguments: { path: "/workspace/note.txt", content: "from mcp" } },
      { name: "fs__read_text_file", arguments: { path: "/etc/hostname" } },
      { name: "time__get_current_time", arguments: { timezone: "Etc/UTC" } },
    ],
    { mcpServers: [filesystemServer(), timeServer()], toolExecution: "sequential" },
  );
  expect((await stage.result(ref)).status).toBe("completed");
  const results = toolResults(await expectIntactSession(stage, ref));
  expect(results[0]).toMatchObject({ isError: false });
  const workspace = workspaceFor(stage.workspaceRoot, ref.tenantId, ref.sessionId).dir;
  expect(readFileSync(join(workspace, "note.txt"), "utf8")).toBe("from mcp");
  expect(results[1]).toMatchObject({ isError: true });
  expect(textOf(results[1]!)).toMatch(/denied|outside/i);
  expect(results[2]).toMatchObject({ isError: false });
  expect(textOf(results[2]!)).toContain("Etc/UTC");
});

test("a long call's progress notifications reach the run's stream as tool updates", async () => {
  const ref = await runCalling(
    "mcp-progress",
    [{ name: "everything__trigger-long-running-operation", arguments: { duration: 4, steps: 4 } }],
    { mcpServers: [everythingServer()] },
  );
  expect((await stage.result(ref)).status).toBe("completed");
  const results = toolResults(await expectIntactSession(stage, ref));
  expect(textOf(results[0]!)).toContain("Long running operation completed");
  const stream = await stage.client.workflow
    .getHandle(runWorkflowId(ref))
    .query<{ items: { topic: string; data: unknown }[] }, [number]>("stream", 0);
  const updates = stream.items.filter(
    (item) => item.topic === "live" && JSON.stringify(item.data).includes("tool_execution_update"),
  );
  expect(JSON.stringify(updates)).toMatch(/progress \d\/4/);
});

test("a server that crashes mid-call: the call ends with an error result, the run goes on", async () => {
  const ref = await runCalling(
    "mcp-crash-server",
    [{ name: "everything__trigger-long-running-operation", arguments: { duration: 20, steps: 2 } }],
    { mcpServers: [crashingEverythingServer(4)] },
  );
  expect((await stage.result(ref)).status).toBe("completed");
  const results = toolResults(await expectIntactSession(stage, ref));
  expect(results[0]).toMatchObject({ isError: true });
  expect(textOf(results[0]!)).toMatch(/closed the connection/);
});

test("a server slower than its timeout: the call ends with a timeout result", async () => {
  const ref = await runCalling(
    "mcp-hang",
    [{ name: "everything__trigger-long-running-operation", arguments: { duration: 30, steps: 1 } }],
    { mcpServers: [everythingServer({ timeoutMs: 2_000 })] },
  );
  expect((await stage.result(ref)).status).toBe("completed");
  const results = toolResults(await expectIntactSession(stage, ref));
  expect(results[0]).toMatchObject({ isError: true });
  expect(textOf(results[0]!)).toContain("did not answer within 2 seconds");
});

test("abort during an MCP call: the call is cancelled and the run ends aborted", async () => {
  const ref = await runCalling(
    "mcp-abort",
    [{ name: "everything__trigger-long-running-operation", arguments: { duration: 60, steps: 60 } }],
    { mcpServers: [everythingServer()] },
  );
  await eventually(async () => {
    const state = await stage.runs.state(ref);
    return state?.pendingToolCalls.some((call) => call.state === "running") ? true : undefined;
  });
  const started = Date.now();
  await stage.runs.abort(ref, { reason: "enough" });
  const result = await stage.result(ref);
  expect(result.status).toBe("aborted");
  expect(Date.now() - started).toBeLessThan(20_000);
  const results = toolResults(await expectIntactSession(stage, ref));
  expect(results[0]).toMatchObject({ isError: true });
});

test("an MCP tool behind ask waits for approval by its name and arguments", async () => {
  const ref = await runCalling(
    "mcp-ask",
    [{ name: "everything__echo", arguments: { message: "needs a yes" } }],
    {
      mcpServers: [everythingServer()],
      policy: {
        rules: [{ tool: "everything__echo", argumentsPattern: "needs a yes", action: "ask" }],
        default: "allow",
        approvalTimeoutMs: 60_000,
      },
    },
  );
  const state = await eventually(async () => {
    const current = await stage.runs.state(ref);
    return current?.status === "waiting_approval" ? current : undefined;
  });
  const pending = state.pendingToolCalls[0]!;
  expect(pending.name).toBe("everything__echo");
  await stage.runs.approve(ref, { toolCallId: pending.toolCallId, decision: "approve" });
  expect((await stage.result(ref)).status).toBe("completed");
  expect(textOf(toolResults(await stage.entries(ref))[0]!)).toBe("Echo: needs a yes");
});

test("the tool list is listed once and carried across continue-as-new", async () => {
  stage.llm.addScenario("mcp-can", {
    turns: [
      { toolCalls: [{ name: "everything__echo", arguments: { message: "one" } }] },
      { toolCalls: [{ name: "everything__echo", arguments: { message: "two" } }] },
    ],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const ref = stage.newSession();
  const settings = stage.settings({ mcpServers: [everythingServer()] });
  settings.limits = { ...settings.limits, turnsPerExecution: 1 };
  await stage.runs.deliver(ref, { text: "[scenario:mcp-can] go", mode: "auto" }, settings);
  expect((await stage.result(ref)).status).toBe("completed");
  const results = toolResults(await expectIntactSession(stage, ref));
  expect(results.map(textOf)).toEqual(["Echo: one", "Echo: two"]);
  // Every execution after the first offered the tools without listing them again.
  const requests = stage.llm.journal().filter((entry) => entry.scenario === "mcp-can");
  expect(requests.length).toBeGreaterThanOrEqual(3);
  for (const request of requests) expect(JSON.stringify(request.body)).toContain("everything__echo");
  const handle = stage.client.workflow.getHandle(runWorkflowId(ref));
  const latest = await handle.fetchHistory();
  const scheduled = (latest.events ?? []).map(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name,
  );
  expect(scheduled).not.toContain("listMcpTools");
});

test("a server down at start is reported and offers no tools; the run does not fail", async () => {
  const ref = await runCalling(
    "mcp-down",
    [{ name: "everything__echo", arguments: { message: "still here" } }],
    {
      mcpServers: [everythingServer(), { name: "broken", command: "/nonexistent/server" }],
    },
  );
  expect((await stage.result(ref)).status).toBe("completed");
  const events = await allEvents(ref);
  const down = events.find((event) => event.type === "mcp_server_unavailable");
  expect(down).toMatchObject({ server: "broken" });
  // What `keel mcp list` shows: the run's recorded list (the mcpTools query).
  const recorded = await stage.runs.mcpTools(ref);
  expect(recorded?.servers.map((listing) => [listing.server, listing.status])).toEqual([
    ["everything", "ready"],
    ["broken", "unavailable"],
  ]);
  expect(textOf(toolResults(await stage.entries(ref))[0]!)).toBe("Echo: still here");
  const request = stage.llm.journal().find((entry) => entry.scenario === "mcp-down")?.body;
  expect(JSON.stringify(request)).not.toContain("broken__");
});

test("an HTTP server on a loopback address is refused by the egress policy", async () => {
  const ref = await runCalling("mcp-http-refused", [{ name: "inside__echo", arguments: {} }], {
    mcpServers: [{ name: "inside", url: "http://127.0.0.1:9000/mcp" }],
  });
  expect((await stage.result(ref)).status).toBe("completed");
  const down = (await allEvents(ref)).find((event) => event.type === "mcp_server_unavailable");
  expect(JSON.stringify(down)).toMatch(/loopback/);
  expect(existsSync(workspaceFor(stage.workspaceRoot, ref.tenantId, ref.sessionId).dir)).toBe(true);
});

test("tenant secrets by reference: none without a vault; a stdio server gets a placeholder, an HTTP server's value goes to bound hosts over HTTPS only; KEEL_MCP_SECRETS stops a worker", async () => {
  // This file's worker has no vault: a server naming a secret (sent past the API, straight to
  // Temporal) is refused before it starts.
  const ref = await runCalling("mcp-secret-refused", [{ name: "leaky__get-env", arguments: {} }], {
    mcpServers: [everythingServer({ name: "leaky", env: { STOLEN: { secret: "OPENAI_API_KEY" } } })],
  });
  expect((await stage.result(ref)).status).toBe("completed");
  const down = (await allEvents(ref)).find((event) => event.type === "mcp_server_unavailable");
  expect(JSON.stringify(down)).toContain("no vault is configured here");
  expect(JSON.stringify(await stage.entries(ref))).not.toContain("local-key");

  // The operator-wide setting is retired: a worker refuses to start while it is set.
  await expect(stage.startWorker({ ...MCP_WORKER_ENV, KEEL_MCP_SECRETS: "MCP_TEST_TOKEN" })).rejects.toThrow(
    /KEEL_MCP_SECRETS is replaced by tenant secrets: each tenant stores its own \(keel secret set NAME --host HOST\)/,
  );

  // A worker with the tenant's vault: the stdio server's variable holds a placeholder, never the value.
  const { keyFile, vault } = tenantVault();
  const value = `token-${randomBytes(8).toString("hex")}`;
  await vault.set(
    stage.tenantId,
    { name: "MCP_TEST_TOKEN", hosts: ["api.example.com"], in: ["header"] },
    value,
  );
  await stage.stopWorkers();
  await stage.startWorker({ ...MCP_WORKER_ENV, KEEL_VAULT_KEY_FILE: keyFile });
  const stdio = await runCalling("mcp-secret-stdio", [{ name: "tokened__get-env", arguments: {} }], {
    mcpServers: [everythingServer({ name: "tokened", env: { TOKEN: { secret: "MCP_TEST_TOKEN" } } })],
  });
  expect((await stage.result(stdio)).status).toBe("completed");
  const env = textOf(toolResults(await expectIntactSession(stage, stdio))[0]!);
  expect(env).toMatch(/keel-placeholder-MCP_TEST_TOKEN-[0-9a-f]{32}/);
  expect(env).not.toContain(value);
  const history = await stage.client.workflow.getHandle(runWorkflowId(stdio)).fetchHistory();
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
  const input = Buffer.from(started ?? new Uint8Array()).toString();
  expect(input).toContain("MCP_TEST_TOKEN");
  expect(input).not.toContain(value);

  // An HTTP server's header: never to a host the secret is not bound to, never over plain HTTP.
  const http = await runCalling("mcp-secret-http", [{ name: "unbound__echo", arguments: { message: "x" } }], {
    mcpServers: [
      {
        name: "unbound",
        url: "https://mcp.elsewhere.example/mcp",
        headers: { Authorization: { secret: "MCP_TEST_TOKEN" } },
      },
      {
        name: "plain",
        url: "http://api.example.com/mcp",
        headers: { Authorization: { secret: "MCP_TEST_TOKEN" } },
      },
    ],
  });
  expect((await stage.result(http)).status).toBe("completed");
  const unavailable = JSON.stringify(
    (await allEvents(http)).filter((event) => event.type === "mcp_server_unavailable"),
  );
  expect(unavailable).toContain(
    "the secret MCP_TEST_TOKEN is bound to api.example.com, not to mcp.elsewhere.example: its value goes only to the hosts it is bound to",
  );
  expect(unavailable).toContain("the secret MCP_TEST_TOKEN is sent over HTTPS only");
  expect(unavailable).not.toContain(value);
  await stage.stopWorkers();
  await stage.startWorker(MCP_WORKER_ENV);
});

test("an HTTP server's header carries the tenant's value, put in by the worker, when the server's host is one the secret is bound to", async () => {
  const everything = await startEverythingHttp();
  const seen: string[] = [];
  const front = await startHttpsStandIn((request, response) => {
    seen.push(request.headers.authorization ?? "");
    forwardHttp(new URL(everything.url), request, response);
  });
  const port = front.port;
  const caFile = join(testTmpDir(), `${uniqueName("ca")}.pem`);
  writeFileSync(caFile, front.caPem);
  const { keyFile, vault } = tenantVault();
  const value = `Bearer tracker-${randomBytes(8).toString("hex")}`;
  await vault.set(
    stage.tenantId,
    { name: "TRACKER_TOKEN", hosts: [`mcp.keel.test:${port}`], in: ["header"] },
    value,
  );
  await stage.stopWorkers();
  await stage.startWorker({
    ...MCP_WORKER_ENV,
    KEEL_VAULT_KEY_FILE: keyFile,
    // The test host resolves to this machine (allowed as a private host) and its CA is trusted.
    KEEL_MCP_HOSTS: "mcp.keel.test",
    NODE_OPTIONS: `--require ${join(__dirname, "../../support/resolve-test-hosts.cjs")}`,
    NODE_EXTRA_CA_CERTS: caFile,
  });
  try {
    const ref = await runCalling(
      "mcp-secret-header",
      [{ name: "tracker__echo", arguments: { message: "hi" } }],
      {
        mcpServers: [
          {
            name: "tracker",
            url: `https://mcp.keel.test:${port}/mcp`,
            headers: { Authorization: { secret: "TRACKER_TOKEN" } },
          },
        ],
      },
    );
    expect((await stage.result(ref)).status).toBe("completed");
    const entries = await expectIntactSession(stage, ref);
    expect(textOf(toolResults(entries)[0]!)).toContain("hi");
    expect(seen.length).toBeGreaterThan(0);
    expect(new Set(seen)).toEqual(new Set([value]));
    expect(JSON.stringify(entries)).not.toContain(value);
  } finally {
    await stage.stopWorkers();
    await stage.startWorker(MCP_WORKER_ENV);
    await front.close();
    await everything.stop();
  }
});

test("a server that announces a changed tool list is listed again; the model sees the new tool from the next turn, across continue-as-new and replay", async () => {
  stage.llm.addScenario("mcp-list-changed", {
    turns: [
      { toolCalls: [{ name: "changing__enable-extra", arguments: {} }] },
      { toolCalls: [{ name: "changing__extra", arguments: {} }] },
    ],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const ref = stage.newSession();
  const settings = stage.settings({ mcpServers: [changingServer()] });
  settings.limits = { ...settings.limits, turnsPerExecution: 1 };
  await stage.runs.deliver(ref, { text: "[scenario:mcp-list-changed] go", mode: "auto" }, settings);
  expect((await stage.result(ref)).status).toBe("completed");
  const results = toolResults(await expectIntactSession(stage, ref));
  expect(results.map(textOf)).toEqual(["extra enabled", "extra answered"]);

  const offered = stage.llm
    .journal()
    .filter((entry) => entry.scenario === "mcp-list-changed")
    .map((entry) => JSON.stringify(entry.body).includes('"changing__extra"'));
  expect(offered[0]).toBe(false);
  expect(offered.slice(1).every(Boolean)).toBe(true);
  const recorded = await stage.runs.mcpTools(ref);
  const names = recorded?.servers.flatMap((listing) =>
    listing.status === "ready" ? listing.tools.map((entry) => entry.tool) : [],
  );
  expect(names).toEqual(["enable-extra", "extra"]);

  // The first execution listed again (and said so); it replays against the current code.
  const latest = await stage.client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
  const first = latest.events?.[0]?.workflowExecutionStartedEventAttributes?.firstExecutionRunId ?? undefined;
  const firstRun = stage.client.workflow.getHandle(runWorkflowId(ref), first);
  const events = await firstRun.query<AgentEvent[], [number]>("events", 0);
  expect(events.find((event) => event.type === "mcp_tools_changed")).toMatchObject({
    type: "mcp_tools_changed",
    server: "changing",
    tools: ["changing__enable-extra", "changing__extra"],
  });
  const history = await firstRun.fetchHistory();
  const scheduled = (history.events ?? []).map(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name,
  );
  expect(scheduled.filter((name) => name === "listMcpTools")).toHaveLength(2);
  await Worker.runReplayHistory({ workflowBundle: { codePath: workflowBundlePath() } }, history);
});

test("a Streamable HTTP server: refused at a loopback address the operator did not allow, called end to end once it does", async () => {
  const remote = await startEverythingHttp();
  try {
    const server = { name: "remote", url: remote.url };
    const refused = await runCalling(
      "mcp-http-not-allowed",
      [{ name: "remote__echo", arguments: { message: "nope" } }],
      { mcpServers: [server] },
    );
    expect((await stage.result(refused)).status).toBe("completed");
    const down = (await allEvents(refused)).find((event) => event.type === "mcp_server_unavailable");
    expect(JSON.stringify(down)).toMatch(/loopback/);
    expect(textOf(toolResults(await stage.entries(refused))[0]!)).toMatch(/not one of this run's tools/);

    await stage.stopWorkers();
    await stage.startWorker({ ...MCP_WORKER_ENV, KEEL_MCP_HOSTS: "127.0.0.1" });
    const ref = await runCalling(
      "mcp-http",
      [
        { name: "remote__echo", arguments: { message: "over http" } },
        { name: "remote__get-sum", arguments: { a: 20, b: 22 } },
        { name: "remote__trigger-long-running-operation", arguments: { duration: 2, steps: 2 } },
      ],
      { mcpServers: [server] },
    );
    expect((await stage.result(ref)).status).toBe("completed");
    const results = toolResults(await expectIntactSession(stage, ref));
    expect(results.map((result) => result.isError)).toEqual([false, false, false]);
    expect(textOf(results[0]!)).toBe("Echo: over http");
    expect(textOf(results[1]!)).toContain("42");
    expect(textOf(results[2]!)).toContain("Long running operation completed");
    expect((await stage.runs.mcpTools(ref))?.servers[0]).toMatchObject({ server: "remote", status: "ready" });
  } finally {
    await remote.stop();
  }
});

test("the read-only hook lets MCP tools annotated read-only run and blocks the others", async () => {
  const ref = await runCalling(
    "mcp-read-only",
    [
      { name: "everything__echo", arguments: { message: "just looking" } },
      { name: "everything__toggle-simulated-logging", arguments: {} },
    ],
    { mcpServers: [everythingServer()], hooks: ["read-only"] },
  );
  expect((await stage.result(ref)).status).toBe("completed");
  const results = toolResults(await expectIntactSession(stage, ref));
  expect(textOf(results[0]!)).toBe("Echo: just looking");
  expect(results[1]).toMatchObject({ isError: true });
  expect(textOf(results[1]!)).toBe(
    "Tool call blocked: everything__toggle-simulated-logging is blocked: this run is read-only.",
  );
  // Blocked before it ran: no activity was scheduled for it.
  const history = await stage.client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
  const summaries = (history.events ?? []).map((event) =>
    Buffer.from(event.userMetadata?.summary?.data ?? new Uint8Array()).toString(),
  );
  expect(summaries.some((summary) => summary.includes("everything__echo"))).toBe(true);
  expect(summaries.some((summary) => summary.includes("toggle-simulated-logging"))).toBe(false);
});
