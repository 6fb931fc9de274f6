/**
 * MCP servers of a run whose tools run on a runner: the runner lists them (its stdio servers start
 * in the session's folder on the runner's host, inside its sandbox) and takes their calls, under
 * the same replay rules as on a worker. The worker starts no server and holds no workspace.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type RunSettings, runWorkflowId } from "../../../src/contracts/runs";
import type { AgentEvent } from "../../../src/core/events";
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import type { McpServerSettings } from "../../../src/mcp/types";
import { uniqueName } from "../../support/integration-env";
import {
  changingServer,
  everythingServer,
  filesystemServer,
  MCP_WORKER_ENV,
} from "../../support/mcp-servers";
import { eventually, expectIntactSession, messagesOf } from "../../support/run-harness";
import type { ApiStage } from "../api/api-stage";
import { claims, type RunnerStage, useRunnerStage, workspaceRoot } from "./runner-stage";

let stage: RunnerStage;
let api: ApiStage;

useRunnerStage((created) => {
  stage = created;
  api = created.api;
});

// A runner to start per test and, in the kill tests, a heartbeat timeout to wait out.
jest.setTimeout(150_000);

type Call = { name: string; arguments: Record<string, unknown> };

/** Starts a run on `environment` whose model makes `turns` of calls, then answers with the last result. */
async function runCalling(
  environment: string,
  turns: Call[][],
  servers: McpServerSettings[],
  settings: Partial<RunSettings> = {},
) {
  const scenario = uniqueName("mcp-runner");
  api.stage.llm.addScenario(scenario, {
    turns: turns.map((toolCalls) => ({ toolCalls })),
    after: { text: "Result: {{lastToolResult}}" },
  });
  const ref = api.stage.newSession();
  await api.stage.runs.deliver(
    ref,
    { text: `[scenario:${scenario}] go`, mode: "auto" },
    api.stage.settings({ environment, mcpServers: servers, toolExecution: "parallel", ...settings }),
  );
  return { ref, scenario };
}

function toolTexts(entries: Awaited<ReturnType<ApiStage["stage"]["entries"]>>) {
  return messagesOf(entries).flatMap((message) =>
    message.role === "toolResult"
      ? [
          {
            isError: message.isError,
            text: message.content.map((b) => (b.type === "text" ? b.text : "")).join(""),
          },
        ]
      : [],
  );
}

async function activityTypes(ref: { tenantId: string; sessionId: string }): Promise<string[]> {
  const history = await api.stage.client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
  return (history.events ?? []).flatMap((event) => {
    const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}

test("a run on a runner lists its MCP servers there and calls them there, in the session's folder", async () => {
  const env = await stage.newEnvironment();
  const root = workspaceRoot();
  const runner = stage.startRunner(env.name, env.token, ["--workspace-root", root], MCP_WORKER_ENV);
  const { ref, scenario } = await runCalling(
    env.name,
    [
      [
        {
          name: "fs__write_file",
          arguments: { path: "/workspace/from-mcp.txt", content: "written by fs\n" },
        },
        { name: "everything__echo", arguments: { message: "hello from the runner" } },
      ],
    ],
    [filesystemServer(), everythingServer(), { name: "broken", command: "/nonexistent/server" }],
  );
  expect((await api.stage.result(ref)).status).toBe("completed");
  const results = toolTexts(await expectIntactSession(api.stage, ref));
  expect(results.map((result) => result.isError)).toEqual([false, false]);
  expect(results[1]?.text).toBe("Echo: hello from the runner");
  // The server wrote into the session's folder on the runner's host; the worker holds nothing.
  expect(readFileSync(join(root, ref.sessionId, "from-mcp.txt"), "utf8")).toBe("written by fs\n");
  expect(existsSync(join(api.stage.workspaceRoot, ref.tenantId, ref.sessionId))).toBe(false);

  // The listing ran on the runner, was recorded with digests, and reported the broken server.
  const types = await activityTypes(ref);
  expect(types).toContain("listMcpToolsOnRunner");
  expect(types).not.toContain("listMcpTools");
  expect(types).not.toContain("executeTool");
  expect(claims(runner).some((line) => line.includes("MCP listing"))).toBe(true);
  const recorded = await api.stage.runs.mcpTools(ref);
  expect(recorded?.servers.map((listing) => [listing.server, listing.status])).toEqual([
    ["fs", "ready"],
    ["everything", "ready"],
    ["broken", "unavailable"],
  ]);
  for (const listing of recorded?.servers ?? [])
    if (listing.status === "ready") expect(listing.digest).toMatch(/^[0-9a-f]{64}$/);
  const events: AgentEvent[] = await api.stage.runs.events(ref, 0);
  expect(events.find((event) => event.type === "mcp_server_unavailable")).toMatchObject({ server: "broken" });
  const places = events.flatMap((event) => (event.type === "tool_execution_start" ? [event.ranOn] : []));
  expect(places.sort()).toEqual([`mcp:everything@${env.name}`, `mcp:fs@${env.name}`]);
  // The model was offered the listed tools, and none of the broken server's.
  const request = JSON.stringify(api.stage.llm.journal().find((entry) => entry.scenario === scenario)?.body);
  expect(request).toContain('"fs__write_file"');
  expect(request).not.toContain("broken__");
});

test("a server on a runner that announces a changed tool list is listed again there", async () => {
  const env = await stage.newEnvironment();
  stage.startRunner(env.name, env.token, ["--workspace-root", workspaceRoot()], MCP_WORKER_ENV);
  const { ref } = await runCalling(
    env.name,
    [[{ name: "changing__enable-extra", arguments: {} }], [{ name: "changing__extra", arguments: {} }]],
    [changingServer()],
  );
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(toolTexts(await expectIntactSession(api.stage, ref)).map((result) => result.text)).toEqual([
    "extra enabled",
    "extra answered",
  ]);
  expect((await activityTypes(ref)).filter((type) => type === "listMcpToolsOnRunner")).toHaveLength(2);
});

test("a run whose MCP servers no runner lists in time goes on without their tools", async () => {
  const env = await stage.newEnvironment();
  const { ref } = await runCalling(env.name, [], [everythingServer()], {
    timeouts: { ...api.stage.settings().timeouts, environmentWaitMs: 2_000 },
  });
  expect((await api.stage.result(ref)).status).toBe("completed");
  const recorded = await api.stage.runs.mcpTools(ref);
  expect(recorded?.servers[0]).toMatchObject({ server: "everything", status: "unavailable" });
  expect(JSON.stringify(recorded)).toContain(`no runner of environment \`${env.name}\` took the listing`);
  await expectIntactSession(api.stage, ref);
});

/** Kills the runner holding a long MCP call; a second runner takes over. */
async function killRunnerDuringCall(server: McpServerSettings) {
  const env = await stage.newEnvironment();
  const root = workspaceRoot();
  const first = stage.startRunner(env.name, env.token, ["--workspace-root", root], MCP_WORKER_ENV);
  const { ref } = await runCalling(
    env.name,
    [[{ name: "everything__trigger-long-running-operation", arguments: { duration: 6, steps: 6 } }]],
    [server],
  );
  await eventually(async () =>
    claims(first).some((line) => line.includes("everything__trigger-long-running-operation"))
      ? true
      : undefined,
  );
  // Well inside the call (it takes 6 s).
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await first.kill();
  const second = stage.startRunner(env.name, env.token, ["--workspace-root", root], MCP_WORKER_ENV);
  expect((await api.stage.result(ref)).status).toBe("completed");
  const results = toolTexts(await expectIntactSession(api.stage, ref));
  return { result: results[0], secondClaims: claims(second) };
}

test("a runner killed during a read-only MCP call: another runner calls it again", async () => {
  const { result, secondClaims } = await killRunnerDuringCall(everythingServer());
  expect(result).toMatchObject({ isError: false });
  expect(result?.text).toContain("Long running operation completed");
  expect(secondClaims.some((line) => line.includes("trigger-long-running-operation"))).toBe(true);
});

test("a runner killed during an MCP call that is not safe to repeat: not repeated, the outcome is unknown", async () => {
  const { result, secondClaims } = await killRunnerDuringCall(
    everythingServer({ replay: { "trigger-long-running-operation": "unsafe" } }),
  );
  expect(result).toEqual({ isError: true, text: UNKNOWN_OUTCOME_TEXT });
  expect(secondClaims.some((line) => line.includes("trigger-long-running-operation"))).toBe(false);
});

test("abort during an MCP call on a runner: the call is cancelled there and the run ends aborted", async () => {
  const env = await stage.newEnvironment();
  const runner = stage.startRunner(
    env.name,
    env.token,
    ["--workspace-root", workspaceRoot()],
    MCP_WORKER_ENV,
  );
  const { ref } = await runCalling(
    env.name,
    [[{ name: "everything__trigger-long-running-operation", arguments: { duration: 60, steps: 60 } }]],
    [everythingServer()],
  );
  await eventually(async () =>
    claims(runner).some((line) => line.includes("trigger-long-running-operation")) ? true : undefined,
  );
  const started = Date.now();
  await api.stage.runs.signalAbort(ref, "enough");
  expect((await api.stage.result(ref)).status).toBe("aborted");
  expect(Date.now() - started).toBeLessThan(20_000);
  await eventually(async () => (runner.output().includes("call cancelled by the run") ? true : undefined));
  const results = toolTexts(await expectIntactSession(api.stage, ref));
  expect(results[0]?.isError).toBe(true);
});

test("abort while the listing waits for a runner: the run ends aborted at once", async () => {
  const env = await stage.newEnvironment();
  // No runner: the listing would wait for the run's whole environmentWaitMs (10 minutes by default).
  const { ref } = await runCalling(env.name, [], [everythingServer()]);
  await eventually(async () =>
    (await activityTypes(ref)).includes("listMcpToolsOnRunner") ? true : undefined,
  );
  const started = Date.now();
  await api.stage.runs.signalAbort(ref, "no runner today");
  expect((await api.stage.result(ref)).status).toBe("aborted");
  expect(Date.now() - started).toBeLessThan(20_000);
  await expectIntactSession(api.stage, ref);
});

/** A claim through the API as a runner makes it (`runs` says what it can run). */
async function claimAs(environment: string, token: string, body: Record<string, unknown>) {
  const response = await fetch(`${stage.apiUrl}/v1/environments/${environment}/calls:claim`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const claimed =
    response.status === 200 ? ((await response.json()) as { callId: string; claimId: string }) : undefined;
  return { status: response.status, body: claimed };
}

test("a runner that does not say it runs MCP is refused; the run's own replay overrides win over a runner's answer", async () => {
  const env = await stage.newEnvironment();
  const server = everythingServer({ replay: { echo: "unsafe" } });
  const { ref } = await runCalling(env.name, [], [server, { name: "other", command: "true" }]);
  // A runner of an earlier release (no `runs`) is told why, and takes nothing.
  expect((await claimAs(env.name, env.token, { waitSeconds: 2 })).status).toBe(400);
  const claimed = await claimAs(env.name, env.token, { waitSeconds: 10, runs: ["mcp"] });
  expect(claimed.status).toBe(200);
  expect(claimed.body).toMatchObject({
    kind: "mcp-list",
    servers: [{ name: "everything" }, { name: "other" }],
  });
  // A runner answering for itself: echo "safe" against the run's override, a name no provider
  // takes, and no word on `other`.
  const tool = (name: string) => ({
    tool: name,
    description: name,
    inputSchema: { type: "object" },
    replay: "safe",
  });
  const posted = await fetch(
    `${stage.apiUrl}/v1/environments/${env.name}/calls/${claimed.body?.callId}/result`,
    {
      method: "POST",
      headers: { authorization: `Bearer ${env.token}`, "content-type": "application/json" },
      body: JSON.stringify({
        claimId: claimed.body?.claimId,
        mcpTools: [
          {
            server: "everything",
            status: "ready",
            tools: [tool("echo"), tool("get-sum"), tool("bad name!")],
          },
        ],
      }),
    },
  );
  expect(posted.status).toBe(200);
  expect((await api.stage.result(ref)).status).toBe("completed");
  const recorded = await api.stage.runs.mcpTools(ref);
  expect(recorded?.servers[0]).toMatchObject({
    server: "everything",
    status: "ready",
    tools: [
      { tool: "echo", replay: "unsafe" },
      { tool: "get-sum", replay: "safe" },
    ],
  });
  expect(recorded?.servers[0]?.status === "ready" && recorded.servers[0].tools).toHaveLength(2);
  expect(recorded?.servers[1]).toEqual({
    server: "other",
    status: "unavailable",
    error: "the runner did not list it",
  });
});
