/**
 * Runner environments through the real stack: the API served over HTTP (as a runner reaches it),
 * Temporal, S3, a worker process, and `keel runner` processes a test can SIGKILL.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { WorkflowStreamClient } from "@temporalio/workflow-streams/client";
import { RESULT_TOKEN_STANDING_MS } from "../../../src/api/runner-auth";
import { DEFAULT_RUN_SETTINGS, runWorkflowId } from "../../../src/contracts/runs";
import { childSessionId } from "../../../src/core/agents";
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import { EnvironmentStore } from "../../../src/environments/store";
import { ToolCallMarkers } from "../../../src/store/tool-call-markers";
import { streamQuery } from "../../../src/workflows/definitions";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";
import { eventually, expectIntactSession, messagesOf, toolCallIds } from "../../support/run-harness";
import { type ApiStage, expectProblem } from "../api/api-stage";
import { runKeel } from "../cli/keel-process";
import { claims, processesMatching, type RunnerStage, useRunnerStage, workspaceRoot } from "./runner-stage";

let stage: RunnerStage;
let api: ApiStage;

useRunnerStage((created) => {
  stage = created;
  api = created.api;
});

// Runs with a runner process to start and, in some, a heartbeat timeout to wait out, on a shared machine.
jest.setTimeout(120_000);

const startRunner = (environment: string, token: string, extra: string[] = []) =>
  stage.startRunner(environment, token, extra);
const newEnvironment = (key?: string) => stage.newEnvironment(key);

function runOn(environment: string, scenario: string, text = "go", environmentWaitMs?: number) {
  const ref = api.stage.newSession();
  const settings = api.stage.settings({ environment, toolExecution: "parallel" });
  if (environmentWaitMs !== undefined) settings.timeouts = { ...settings.timeouts, environmentWaitMs };
  return {
    ref,
    delivered: api.stage.runs.deliver(
      ref,
      { text: `[scenario:${scenario}] ${text}`, mode: "auto" },
      settings,
    ),
  };
}

/** A run whose one tool call a claim made here (not by a runner) holds: nothing will run it. */
async function claimedByHand(
  env: { name: string; token: string },
  scenario: string,
  toolCall: { name: string; arguments: Record<string, unknown> },
  environmentWaitMs?: number,
) {
  api.stage.llm.addScenario(scenario, { turns: [{ toolCalls: [toolCall] }], after: { text: "done" } });
  const { ref, delivered } = runOn(env.name, scenario, "go", environmentWaitMs);
  await delivered;
  const claimed = await eventually(async () => {
    const answer = await api.call("POST", `/v1/environments/${env.name}/calls:claim`, {
      key: env.token,
      json: { waitSeconds: 1, runs: ["mcp"] },
    });
    return answer.status === 200 ? answer.body : undefined;
  });
  return { ref, claimed };
}

function toolTexts(entries: Awaited<ReturnType<typeof api.stage.entries>>): string[] {
  return messagesOf(entries).flatMap((message) =>
    message.role === "toolResult"
      ? [message.content.map((block) => (block.type === "text" ? block.text : "")).join("")]
      : [],
  );
}

test("a run's bash and write calls run on the runner, in its workspace, not on the worker", async () => {
  const env = await newEnvironment();
  const root = workspaceRoot();
  startRunner(env.name, env.token, ["--workspace-root", root]);
  api.stage.llm.addScenario("on-runner", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "notes.txt", content: "from the runner\n" } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "cat notes.txt; echo ran-here" } }] },
    ],
    after: { text: "done" },
  });
  const { ref, delivered } = runOn(env.name, "on-runner");
  await delivered;
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(readFileSync(join(root, ref.sessionId, "notes.txt"), "utf8")).toBe("from the runner\n");
  expect(existsSync(join(api.stage.workspaceRoot, ref.tenantId, ref.sessionId))).toBe(false);
  const texts = toolTexts(await expectIntactSession(api.stage, ref));
  expect(texts[1]).toContain("from the runner\nran-here");
  // The events say where each call ran.
  const starts = (await api.stage.runs.events(ref, 0)).filter(
    (event) => event.type === "tool_execution_start",
  );
  expect(starts.map((event) => (event.type === "tool_execution_start" ? event.ranOn : undefined))).toEqual([
    env.name,
    env.name,
  ]);
});

test("a runner's bash output reaches the run's stream while it runs", async () => {
  // Each stream client the API opens to publish is disposed: a client left open keeps a flusher
  // waking for as long as the API process lives.
  const opened = jest.spyOn(WorkflowStreamClient, "create");
  const disposed = jest.spyOn(WorkflowStreamClient.prototype, Symbol.asyncDispose);
  const env = await newEnvironment();
  startRunner(env.name, env.token, ["--workspace-root", workspaceRoot()]);
  api.stage.llm.addScenario("runner-live", {
    turns: [
      {
        toolCalls: [
          {
            name: "bash",
            arguments: { command: "echo tick-one; sleep 2; echo tick-two; sleep 2; echo end" },
          },
        ],
      },
    ],
    after: { text: "done" },
  });
  const { ref, delivered } = runOn(env.name, "runner-live");
  await delivered;
  // While the command still runs (its result is not stored yet), its first line is on the stream.
  const live = await eventually(async () => {
    const page = await api.stage.client.workflow.getHandle(runWorkflowId(ref)).query(streamQuery, 0);
    return page.items.find(
      (item) => item.topic === "live" && (item.data as { partial?: string }).partial?.includes("tick-one"),
    );
  });
  expect((live.data as { type: string }).type).toBe("tool_execution_update");
  expect((live.data as { partial: string }).partial).not.toContain("end");
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(toolTexts(await api.stage.entries(ref))[0]).toContain("tick-one\ntick-two\nend");
  expect(opened.mock.calls.length).toBeGreaterThan(0);
  expect(disposed.mock.calls.length).toBe(opened.mock.calls.length);
});

test("a runner acting on an existing directory changes those files", async () => {
  const env = await newEnvironment();
  const checkout = workspaceRoot();
  writeFileSync(join(checkout, "README.md"), "old title\n");
  startRunner(env.name, env.token, ["--workspace", checkout]);
  api.stage.llm.addScenario("checkout", {
    turns: [
      { toolCalls: [{ name: "edit", arguments: { path: "README.md", oldText: "old", newText: "new" } }] },
    ],
    after: { text: "done" },
  });
  const { ref, delivered } = runOn(env.name, "checkout");
  await delivered;
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(readFileSync(join(checkout, "README.md"), "utf8")).toBe("new title\n");
});

test.each([
  ["keeping workspaces on its disk: a copy of the parent's folder", []],
  ["storing workspaces through the API: the parent's stored workspace", ["--snapshots"]],
])(
  "a sub-agent on a runner %s, starts from its parent's files; its own edits stay in its folder",
  async (_how, flags) => {
    const env = await newEnvironment();
    const root = workspaceRoot();
    startRunner(env.name, env.token, ["--workspace-root", root, ...flags]);
    const parentScenario = uniqueName("fork-parent");
    const childScenario = uniqueName("fork-child");
    api.stage.llm.addScenario(parentScenario, {
      turns: [
        {
          toolCalls: [
            { name: "write", arguments: { path: "notes/plan.txt", content: "parent wrote this\n" } },
          ],
        },
        {
          toolCalls: [
            {
              name: "task",
              arguments: { agent: "writer", prompt: `[scenario:${childScenario}] read the plan` },
            },
          ],
        },
      ],
      after: { text: "done" },
    });
    api.stage.llm.addScenario(childScenario, {
      turns: [
        { toolCalls: [{ name: "read", arguments: { path: "notes/plan.txt" } }] },
        { toolCalls: [{ name: "write", arguments: { path: "notes/child.txt", content: "child\n" } }] },
      ],
      after: { text: "Child read: {{lastToolResult}}" },
    });
    const ref = api.stage.newSession();
    const settings = api.stage.settings({
      environment: env.name,
      tools: [...DEFAULT_RUN_SETTINGS.tools, "task"],
      agents: [{ name: "writer", description: "writes", tools: ["read", "write"] }],
    });
    await api.stage.runs.deliver(ref, { text: `[scenario:${parentScenario}] go`, mode: "auto" }, settings);
    expect((await api.stage.result(ref)).status).toBe("completed");
    const taskCall = toolCallIds(messagesOf(await expectIntactSession(api.stage, ref)))[1] ?? "";
    const childRef = { tenantId: ref.tenantId, sessionId: childSessionId(ref.sessionId, taskCall) };
    const childTexts = toolTexts(await expectIntactSession(api.stage, childRef));
    expect(childTexts[0]).toBe("parent wrote this");
    expect(readFileSync(join(root, childRef.sessionId, "notes", "plan.txt"), "utf8")).toBe(
      "parent wrote this\n",
    );
    expect(readFileSync(join(root, childRef.sessionId, "notes", "child.txt"), "utf8")).toBe("child\n");
    expect(existsSync(join(root, ref.sessionId, "notes", "child.txt"))).toBe(false);
    // The parent's model is told where the child's edits are, not led to think they are its own.
    const taskResult = toolTexts(await api.stage.entries(ref))[1] ?? "";
    expect(taskResult).toContain(
      `Any files it changed are NOT in your workspace: on environment ${env.name} a sub-agent works in a workspace of its own (session ${childRef.sessionId})`,
    );
  },
);

test("a runner killed during bash: the call is not run again, and the session says so", async () => {
  const env = await newEnvironment();
  const root = workspaceRoot();
  const marker = `${Math.floor(Math.random() * 1e6)}`;
  const first = startRunner(env.name, env.token, ["--workspace-root", root]);
  api.stage.llm.addScenario("kill-bash", {
    turns: [
      { toolCalls: [{ name: "bash", arguments: { command: `echo once >> runs.txt; sleep 30.${marker}` } }] },
    ],
    after: { text: "done" },
  });
  const { ref, delivered } = runOn(env.name, "kill-bash");
  await delivered;
  // The shell's own command line names the sleep before its echo has run: wait for the echo too.
  const runs = join(root, ref.sessionId, "runs.txt");
  await eventually(async () =>
    existsSync(runs) && processesMatching(`sleep 30.${marker}`).length > 0 ? true : undefined,
  );
  await first.kill();
  // bubblewrap dies with its parent; the sleep goes with it.
  startRunner(env.name, env.token, ["--workspace-root", root]);
  expect((await api.stage.result(ref)).status).toBe("completed");
  const texts = toolTexts(await expectIntactSession(api.stage, ref));
  expect(texts).toEqual([UNKNOWN_OUTCOME_TEXT]);
  expect(readFileSync(runs, "utf8")).toBe("once\n");
});

test("a runner that dies holding a write: the write is repeated by another runner and the file is there", async () => {
  const env = await newEnvironment();
  const root = workspaceRoot();
  // A runner that claims the call and dies before running it (or mid-way): it never heartbeats.
  const { ref, claimed } = await claimedByHand(env, "lost-write", {
    name: "write",
    arguments: { path: "kept.txt", content: "kept\n" },
  });
  expect(claimed.toolCall.name).toBe("write");
  startRunner(env.name, env.token, ["--workspace-root", root]);
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(readFileSync(join(root, ref.sessionId, "kept.txt"), "utf8")).toBe("kept\n");
  // The dead runner's claim is void: its late result is refused.
  const late = await api.call("POST", `/v1/environments/${env.name}/calls/${claimed.callId}/result`, {
    key: env.token,
    json: { claimId: claimed.claimId, output: { content: [{ type: "text", text: "late" }], isError: false } },
  });
  expectProblem(late, 404, "call-not-found");
  await expectIntactSession(api.stage, ref);
});

test("a claim superseded through another API process: its heartbeat is refused, its late result stands only as the first", async () => {
  const env = await newEnvironment();
  const { ref, claimed: first } = await claimedByHand(env, "superseded-elsewhere", {
    name: "write",
    arguments: { path: "late.txt", content: "late\n" },
  });
  // Another API process (its own app, as a Lambda instance beside this one) takes the retry once
  // the first claim's heartbeat timeout ran out; this process still remembers the first claim.
  const elsewhere = api.callerWith({});
  const second = await eventually(async () => {
    const answer = await elsewhere("POST", `/v1/environments/${env.name}/calls:claim`, {
      key: env.token,
      json: { waitSeconds: 5, runs: ["mcp"] },
    });
    return answer.status === 200 ? answer.body : undefined;
  });
  expect({ callId: second.callId, attempt: second.attempt }).toEqual({ callId: first.callId, attempt: 2 });
  // Temporal refuses the first claim's heartbeat: its attempt is over.
  expectProblem(
    await api.call("POST", `/v1/environments/${env.name}/calls/${first.callId}/heartbeat`, {
      key: env.token,
      json: { claimId: first.claimId },
    }),
    404,
    "call-not-found",
  );
  const report = (caller: typeof api.call, claim: { callId: string; claimId: string }, text: string) =>
    caller("POST", `/v1/environments/${env.name}/calls/${claim.callId}/result`, {
      key: env.token,
      json: { claimId: claim.claimId, output: { content: [{ type: "text", text }], isError: false } },
    });
  // The first claim's late result is the call's first: it is stored, and the second's is adopted
  // (the second claim heartbeats first: its attempt must not time out on a slow machine).
  expect((await report(api.call, first, "from the first claim")).status).toBe(200);
  const beat = await elsewhere("POST", `/v1/environments/${env.name}/calls/${second.callId}/heartbeat`, {
    key: env.token,
    json: { claimId: second.claimId },
  });
  expect(beat.status).toBe(200);
  expect((await report(elsewhere, second, "from the second claim")).status).toBe(200);
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(toolTexts(await expectIntactSession(api.stage, ref))).toEqual(["from the first claim"]);
  // A report after both is used by nothing: refused.
  expectProblem(await report(api.call, first, "again"), 404, "call-not-found");
});

test("a runner that took a write stopped answering, and no runner took it again in time: the call may have run, in part", async () => {
  const env = await newEnvironment();
  const { ref, claimed } = await claimedByHand(
    env,
    "taken-then-unclaimed",
    { name: "write", arguments: { path: "maybe.txt", content: "maybe\n" } },
    3_000,
  );
  // The claim's heartbeat timeout (4 s) runs out; the retry waits 3 s for a runner, then ends.
  expect((await api.stage.result(ref)).status).toBe("completed");
  const [text] = toolTexts(await expectIntactSession(api.stage, ref));
  expect(text).toBe(
    `No runner of environment \`${env.name}\` took this call again within 3 s after the runner that took it stopped answering; it may have run, in part.`,
  );
  // The silent runner's late result is used by nothing (the call has its result, its attempt is over).
  const late = await api.call("POST", `/v1/environments/${env.name}/calls/${claimed.callId}/result`, {
    key: env.token,
    json: { claimId: claimed.claimId, output: { content: [{ type: "text", text: "late" }], isError: false } },
  });
  expectProblem(late, 404, "call-not-found");
});

test("no runner: the call waits, visibly, and runs when a runner comes", async () => {
  const env = await newEnvironment();
  api.stage.llm.addScenario("offline", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo back" } }] }],
    after: { text: "done" },
  });
  const { ref, delivered } = runOn(env.name, "offline");
  await delivered;
  await eventually(async () => {
    const shown = await api.call("GET", `/v1/environments/${env.name}`);
    return shown.body?.waitingCalls === 1 ? true : undefined;
  });
  // The run's stream says what the call waits for (clients show it; the SSE feed carries it).
  const waiting = await eventually(async () => {
    const page = await api.stage.client.workflow.getHandle(runWorkflowId(ref)).query(streamQuery, 0);
    return page.items.find(
      (item) =>
        item.topic === "live" &&
        (item.data as { partial?: string }).partial?.startsWith(`[waiting for environment \`${env.name}\``),
    );
  });
  expect(waiting).toBeDefined();
  await new Promise((done) => setTimeout(done, 6_000)); // longer than the heartbeat timeout (4 s)
  const state = await api.stage.runs.state(ref);
  expect(state?.pendingToolCalls.map((call) => call.state)).toEqual(["running"]);
  startRunner(env.name, env.token, ["--workspace-root", workspaceRoot()]);
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(toolTexts(await api.stage.entries(ref))).toEqual(["back"]);
});

test("a runner that died mid-call and no other up: the retry's wait is said in the stream and by keel show", async () => {
  const env = await newEnvironment();
  // A claim held here and never answered is a runner killed mid-call: its heartbeats stop.
  const { ref } = await claimedByHand(
    env,
    "retry-waits",
    { name: "bash", arguments: { command: "echo x" } },
    20_000,
  );
  // The claim's heartbeat timeout (4 s) passes; Temporal schedules attempt 2, which no runner takes.
  const retryWait = await eventually(async () => {
    const page = await api.stage.client.workflow.getHandle(runWorkflowId(ref)).query(streamQuery, 0);
    return page.items.find(
      (item) => item.topic === "live" && (item.data as { attempt?: number }).attempt === 2,
    )?.data as { partial?: string } | undefined;
  }, 15_000);
  expect(retryWait?.partial).toBe(
    `[waiting for environment \`${env.name}\`: the runner that took this call stopped answering, and no runner has taken it again yet]`,
  );
  const shown = await runKeel(["show", ref.sessionId], {
    KEEL_API_URL: stage.apiUrl,
    KEEL_API_KEY: api.keys.a,
  });
  expect(shown.stdout).toMatch(
    new RegExp(
      `status   running\\n[^]*waiting  for environment \`${env.name}\`: the runner that took this call stopped answering, and no runner has taken it again yet \\(\\d+ s\\)`,
    ),
  );
});

test("a runner that went away while its claim waited: the call that claim's poll takes is given back at once", async () => {
  const env = await newEnvironment();
  // A claim whose runner hangs up while the API's long poll (never cancelled) is still open.
  const hangUp = new AbortController();
  const claim = fetch(`${stage.apiUrl}/v1/environments/${env.name}/calls:claim`, {
    method: "POST",
    headers: { authorization: `Bearer ${env.token}`, "content-type": "application/json" },
    body: JSON.stringify({ waitSeconds: 20, runs: ["mcp"] }),
    signal: hangUp.signal,
  }).catch(() => undefined);
  await new Promise((done) => setTimeout(done, 1_000));
  hangUp.abort();
  await claim;
  api.stage.llm.addScenario("hung-up", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "done" },
  });
  const { ref, delivered } = runOn(env.name, "hung-up");
  await delivered;
  // The abandoned poll takes the call; the API fails it back (not left to its heartbeat timeout,
  // whose failure would read otherwise), and the retry waits for a runner.
  const given = await eventually(async () => {
    const described = await api.stage.client.workflow.getHandle(runWorkflowId(ref)).describe();
    const call = described.raw.pendingActivities?.find(
      (activity) => activity.activityType?.name === "executeToolOnRunner",
    );
    return call?.lastFailure ? { attempt: call.attempt, why: call.lastFailure.message } : undefined;
  });
  expect(given).toEqual({ attempt: 2, why: "the runner went away before the call was handed over" });
  startRunner(env.name, env.token, ["--workspace-root", workspaceRoot()]);
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(toolTexts(await expectIntactSession(api.stage, ref))).toHaveLength(1);
});

test("no runner within the run's wait: the call gets an error result naming the environment", async () => {
  const env = await newEnvironment();
  api.stage.llm.addScenario("nobody", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "done" },
  });
  const ref = api.stage.newSession();
  const settings = api.stage.settings({ environment: env.name });
  settings.timeouts = { ...settings.timeouts, environmentWaitMs: 2_000 };
  await api.stage.runs.deliver(ref, { text: "[scenario:nobody] go", mode: "auto" }, settings);
  expect((await api.stage.result(ref)).status).toBe("completed");
  const [text] = toolTexts(await expectIntactSession(api.stage, ref));
  expect(text).toContain(`No runner of environment \`${env.name}\` took this call`);
});

test("two runners of one environment share a parallel batch", async () => {
  const env = await newEnvironment();
  const root = workspaceRoot();
  const a = startRunner(env.name, env.token, ["--workspace-root", root, "--concurrency", "1"]);
  const b = startRunner(env.name, env.token, ["--workspace-root", root, "--concurrency", "1"]);
  api.stage.llm.addScenario("shared", {
    turns: [
      {
        toolCalls: [1, 2, 3, 4].map((n) => ({
          name: "bash",
          arguments: { command: `sleep 1; echo call-${n}` },
        })),
      },
    ],
    after: { text: "done" },
  });
  const { ref, delivered } = runOn(env.name, "shared");
  await delivered;
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(toolTexts(await expectIntactSession(api.stage, ref))).toEqual([1, 2, 3, 4].map((n) => `call-${n}`));
  expect(claims(a).length).toBeGreaterThan(0);
  expect(claims(b).length).toBeGreaterThan(0);
  expect(claims(a).length + claims(b).length).toBe(4);
});

test("abort while a runner holds a call stops the command and ends the run", async () => {
  const env = await newEnvironment();
  const marker = `${Math.floor(Math.random() * 1e6)}`;
  startRunner(env.name, env.token, ["--workspace-root", workspaceRoot()]);
  api.stage.llm.addScenario("abort-runner", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: `sleep 60.${marker}` } }] }],
    after: { text: "done" },
  });
  const { ref, delivered } = runOn(env.name, "abort-runner");
  await delivered;
  await eventually(async () => (processesMatching(`sleep 60.${marker}`).length > 0 ? true : undefined));
  const abortedAt = Date.now();
  await api.stage.runs.signalAbort(ref, "stop");
  expect((await api.stage.result(ref)).status).toBe("aborted");
  expect(Date.now() - abortedAt).toBeLessThan(10_000);
  await eventually(
    async () => (processesMatching(`sleep 60.${marker}`).length === 0 ? true : undefined),
    5_000,
  );
  await expectIntactSession(api.stage, ref);
});

test("a runner token serves its own tenant's environment only", async () => {
  const mine = await newEnvironment(api.keys.a);
  // Tenant B has an environment of the same name.
  expect(
    (await api.call("POST", "/v1/environments", { key: api.keys.b, json: { name: mine.name } })).status,
  ).toBe(201);
  const other = await newEnvironment(api.keys.b);
  // A's token on B's environment name: not found, whatever B has.
  expectProblem(
    await api.call("POST", `/v1/environments/${other.name}/calls:claim`, {
      key: mine.token,
      json: { waitSeconds: 0, runs: ["mcp"] },
    }),
    404,
    "environment-not-found",
  );
  // Tenant B puts a call on its environment named like A's: A's runner never sees it.
  api.stage.llm.addScenario("tenant-b", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "done" },
  });
  const refB = { tenantId: api.tenants.b, sessionId: uniqueName("session") };
  await api.stage.runs.deliver(
    refB,
    { text: "[scenario:tenant-b] go", mode: "auto" },
    api.stage.settings({ environment: mine.name }),
  );
  await eventually(async () => {
    const shown = await api.call("GET", `/v1/environments/${mine.name}`, { key: api.keys.b });
    return shown.body?.waitingCalls === 1 ? true : undefined;
  });
  const claimA = await api.call("POST", `/v1/environments/${mine.name}/calls:claim`, {
    key: mine.token,
    json: { waitSeconds: 1, runs: ["mcp"] },
  });
  expect(claimA.status).toBe(204);
  const callId = `${refB.sessionId}.2`;
  expectProblem(
    await api.call("POST", `/v1/environments/${mine.name}/calls/${callId}/heartbeat`, {
      key: mine.token,
      json: { claimId: "x" },
    }),
    404,
    "call-not-found",
  );
  // Tokens manage nothing; API keys take no calls; tenant B cannot see A's environment's tokens.
  expectProblem(await api.call("GET", "/v1/environments", { key: mine.token }), 401, "unauthorized");
  expectProblem(
    await api.call("POST", `/v1/environments/${mine.name}/calls:claim`, { json: {} }),
    401,
    "unauthorized",
  );
  const seenByB = await api.call("GET", `/v1/environments/${mine.name}`, { key: api.keys.b });
  expect(seenByB.body.tokens).toEqual([]);
  await api.stage.runs.signalAbort(refB, "test over");
  await api.stage.result(refB);
});

test("a revoked token is refused at once and its runner stops getting work", async () => {
  const env = await newEnvironment();
  const runner = startRunner(env.name, env.token, ["--workspace-root", workspaceRoot()]);
  await eventually(async () => (runner.output().includes("runner started") ? true : undefined));
  // Its long polls (20 s each) are in flight, authenticated before the revocation.
  await new Promise((done) => setTimeout(done, 3_000));
  expect((await api.call("DELETE", `/v1/environments/${env.name}/tokens/${env.tokenId}`)).status).toBe(204);
  expectProblem(
    await api.call("POST", `/v1/environments/${env.name}/calls:claim`, {
      key: env.token,
      json: { waitSeconds: 0, runs: ["mcp"] },
    }),
    401,
    "unauthorized",
  );
  // Its next claim (at most one long poll later) is refused and it exits.
  api.stage.llm.addScenario("revoked", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "done" },
  });
  const ref = api.stage.newSession();
  const settings = api.stage.settings({ environment: env.name });
  settings.timeouts = { ...settings.timeouts, environmentWaitMs: 3_000 };
  await api.stage.runs.deliver(ref, { text: "[scenario:revoked] go", mode: "auto" }, settings);
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(toolTexts(await api.stage.entries(ref))[0]).toContain("No runner of environment");
  expect(claims(runner)).toEqual([]);
  expect(
    await Promise.race([runner.exited, new Promise((done) => setTimeout(() => done("running"), 25_000))]),
  ).not.toBe("running");
});

test("a token revoked through another API process: its heartbeats and results are refused within a second", async () => {
  const env = await newEnvironment();
  const { ref, claimed } = await claimedByHand(env, "revoked-elsewhere", {
    name: "bash",
    arguments: { command: "echo never" },
  });
  const beat = () =>
    api.call("POST", `/v1/environments/${env.name}/calls/${claimed.callId}/heartbeat`, {
      key: env.token,
      json: { claimId: claimed.claimId },
    });
  expect((await beat()).status).toBe(200);
  // Another API process (its own store, as a Lambda instance beside this one) revokes the token.
  const s3 = s3Client();
  const elsewhere = new EnvironmentStore(s3, s3Settings().bucket, s3Settings().prefix);
  expect(await elsewhere.revoke(api.tenants.a, env.name, env.tokenId)).toBe(true);
  s3.destroy();
  await new Promise((done) => setTimeout(done, RESULT_TOKEN_STANDING_MS + 100));
  expectProblem(await beat(), 401, "unauthorized");
  expectProblem(
    await api.call("POST", `/v1/environments/${env.name}/calls/${claimed.callId}/result`, {
      key: env.token,
      json: {
        claimId: claimed.claimId,
        output: { content: [{ type: "text", text: "forged" }], isError: false },
      },
    }),
    401,
    "unauthorized",
  );
  await api.stage.runs.signalAbort(ref, "test over");
  expect((await api.stage.result(ref)).status).toBe("aborted");
  expect(JSON.stringify(await api.stage.entries(ref))).not.toContain("forged");
  await expectIntactSession(api.stage, ref);
});

/**
 * A run on a new environment, with a runner started on `root`, whose one call of `toolCall`
 * waits for a person's approval: the run and the call's id.
 */
async function awaitingApproval(
  scenario: string,
  toolCall: { name: string; arguments: Record<string, unknown> },
  root: string,
) {
  const env = await newEnvironment();
  startRunner(env.name, env.token, ["--workspace-root", root]);
  api.stage.llm.addScenario(scenario, { turns: [{ toolCalls: [toolCall] }], after: { text: "done" } });
  const ref = api.stage.newSession();
  const settings = api.stage.settings({
    environment: env.name,
    policy: { rules: [{ tool: toolCall.name, action: "ask" }], default: "allow", approvalTimeoutMs: 60_000 },
  });
  await api.stage.runs.deliver(ref, { text: `[scenario:${scenario}] go`, mode: "auto" }, settings);
  const toolCallId = await eventually(async () => {
    const state = await api.stage.runs.state(ref);
    return state?.pendingToolCalls.find((call) => call.state === "awaiting_approval")?.toolCallId;
  });
  return { ref, toolCallId };
}

test("approval then runner: the runner runs the arguments the person approved, and the result says so", async () => {
  const { ref, toolCallId } = await awaitingApproval(
    "approve-runner",
    { name: "bash", arguments: { command: "echo asked" } },
    workspaceRoot(),
  );
  await api.stage.runs.approve(ref, {
    toolCallId,
    decision: "approve",
    arguments: { command: "echo edited" },
  });
  expect((await api.stage.result(ref)).status).toBe("completed");
  const result = messagesOf(await expectIntactSession(api.stage, ref)).find(
    (message) => message.role === "toolResult",
  );
  expect(result).toMatchObject({
    isError: false,
    details: { approval: { decision: "approved_with_edits", arguments: { command: "echo edited" } } },
  });
  expect(result?.role === "toolResult" && result.content).toContainEqual({ type: "text", text: "edited" });
});

test("an approved edit too large for the run's history reaches the runner whole (its input is fetched back from S3)", async () => {
  const root = workspaceRoot();
  const { ref, toolCallId } = await awaitingApproval(
    "approve-large",
    { name: "write", arguments: { path: "big.txt", content: "small" } },
    root,
  );
  // Over the data converter's 256 KiB: the call's input is stored in S3, its history holds a reference.
  const content = "y".repeat(300 * 1024);
  await api.stage.runs.approve(ref, {
    toolCallId,
    decision: "approve",
    arguments: { path: "big.txt", content },
  });
  expect((await api.stage.result(ref)).status).toBe("completed");
  expect(readFileSync(join(root, ref.sessionId, "big.txt"), "utf8")).toBe(content);
  await expectIntactSession(api.stage, ref);
});

test("a runner token may keep only so many claims waiting at one API process; another token is counted apart", async () => {
  const env = await newEnvironment();
  const other = await api.call("POST", `/v1/environments/${env.name}/tokens`, { key: api.keys.a });
  expect(other.status).toBe(201);
  const s3 = s3Client();
  const limited = api.callerWith({
    environments: {
      store: new EnvironmentStore(s3, s3Settings().bucket, s3Settings().prefix),
      markers: new ToolCallMarkers(s3, s3Settings()),
      waitingClaimsPerToken: 2,
    },
  });
  const claimWith = (token: string) =>
    limited("POST", `/v1/environments/${env.name}/calls:claim`, {
      key: token,
      json: { waitSeconds: 3, runs: ["mcp"] },
    });
  try {
    const [first, second, third, otherToken] = await Promise.all([
      claimWith(env.token),
      claimWith(env.token),
      claimWith(env.token),
      claimWith(other.body.token),
    ]);
    expect([first, second, third].map((answer) => answer.status).sort()).toEqual([204, 204, 429]);
    const refused = [first, second, third].find((answer) => answer.status === 429);
    if (!refused) throw new Error("unreachable: one claim was refused");
    expectProblem(refused, 429, "too-many-claims");
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(otherToken.status).toBe(204);
    // Ended claims are counted out.
    expect((await claimWith(env.token)).status).toBe(204);
  } finally {
    s3.destroy();
  }
});

test("a message naming an unknown environment is refused", async () => {
  const sessionId = uniqueName("session");
  const message = (json: Record<string, unknown>) =>
    api.call("POST", `/v1/sessions/${sessionId}/messages`, {
      key: api.keys.a,
      json: { text: "go", ...json },
    });
  expectProblem(await message({ environment: "nowhere" }), 404, "environment-not-found");
  // Another tenant's environment is unknown too.
  const theirs = await newEnvironment(api.keys.b);
  expectProblem(await message({ environment: theirs.name }), 404, "environment-not-found");
  // Nothing was started for the session.
  expect((await api.call("GET", `/v1/sessions/${sessionId}`, { key: api.keys.a })).status).toBe(404);
});
