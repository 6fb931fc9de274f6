/**
 * The Slack integration: signatures, URL verification, threads as sessions, stop word, replies,
 * teams mapped in tenant settings, paused runs announced and resumed from the thread.
 */

import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Client, WorkflowNotFoundError } from "@temporalio/client";
import { FOREIGN_AUTHOR_TEXT } from "../../../src/api/slack/budget-replies";
import { slackSignature } from "../../../src/api/slack/signature";
import { readSlackThread, slackSessionId } from "../../../src/api/slack/threads";
import { runWorkflowId } from "../../../src/contracts/runs";
import { postSlackReply } from "../../../src/integrations/slack/reply";
import { RunClient } from "../../../src/run-client/run-client";
import { keelDataConverter } from "../../../src/store/payload-storage";
import { parseSlackTeams } from "../../../src/tenants/slack-team-tools";
import { workspaceFor } from "../../../src/tools/workspace";
import { s3Client, s3Settings, temporalNamespace, uniqueName } from "../../support/integration-env";
import {
  eventually,
  expectIntactSession,
  messagesOf,
  modelCalled,
  slowEchoScenario,
} from "../../support/run-harness";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

const SIGNING_SECRET = "test-signing-secret";
const BOT_USER = "UKEELBOT";
const TEAM = "T0001";
/** A second workspace, mapped to tenant B with its own tools: bash only after an approval. */
const ASKING_TEAM = "T0002";
const UNMAPPED_TEAM = "T0999";
const CHANNEL = "C0001";

/** A stand-in for Slack's Web API recording chat.postMessage calls. */
interface SlackStandIn {
  url: string;
  posts: Array<{ authorization?: string; body: Record<string, string> }>;
  server: Server;
}

async function startSlackStandIn(): Promise<SlackStandIn> {
  const posts: SlackStandIn["posts"] = [];
  const server = createServer((request, response) => {
    let raw = "";
    request.on("data", (chunk: Buffer) => {
      raw += chunk.toString();
    });
    request.on("end", () => {
      const type = request.headers["content-type"] ?? "";
      const body = type.includes("json")
        ? (JSON.parse(raw) as Record<string, string>)
        : Object.fromEntries(new URLSearchParams(raw));
      if (request.url?.endsWith("/chat.postMessage"))
        posts.push({ authorization: request.headers.authorization, body });
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ ok: true, ts: "1700000000.000200" }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`, posts, server };
}

let api: ApiStage;
let slack: SlackStandIn;
const s3 = s3Client();
let eventCounter = 0;

beforeAll(async () => {
  slack = await startSlackStandIn();
  api = await createApiStage({
    slack: (tenants) => ({
      signingSecret: SIGNING_SECRET,
      teams: parseSlackTeams(
        JSON.stringify({
          [TEAM]: tenants.a,
          [ASKING_TEAM]: { tenant: tenants.b, allow: ["read", "ls"], ask: ["bash"] },
        }),
        "test",
      ),
      botToken: "xoxb-test",
      apiUrl: slack.url,
      stopWord: "stop",
    }),
    workerEnv: { KEEL_SLACK_BOT_TOKEN: "xoxb-worker", KEEL_SLACK_API_URL: slack.url },
  });
});

afterAll(async () => {
  await api?.close();
  await new Promise((resolve) => slack?.server.close(resolve));
  s3.destroy();
});

function signedHeaders(body: string, options: { secret?: string; timestamp?: number } = {}) {
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  return {
    "content-type": "application/json",
    "x-slack-request-timestamp": timestamp,
    "x-slack-signature": slackSignature(options.secret ?? SIGNING_SECRET, timestamp, body),
  };
}

async function postEvent(payload: unknown, options: { secret?: string; timestamp?: number } = {}) {
  const body = JSON.stringify(payload);
  return api.call("POST", "/v1/integrations/slack/events", {
    key: null,
    body,
    headers: signedHeaders(body, options),
  });
}

function eventCallback(event: Record<string, unknown>, team = TEAM) {
  eventCounter += 1;
  return {
    type: "event_callback",
    team_id: team,
    event_id: `Ev${eventCounter}-${Date.now()}`,
    authorizations: [{ user_id: BOT_USER }],
    event: { channel: CHANNEL, user: "UHUMAN", ts: `${Date.now() / 1000}`, ...event },
  };
}

const threadRef = (threadTs: string, team = TEAM, tenantId = api.tenants.a) => ({
  tenantId,
  sessionId: slackSessionId({ teamId: team, channel: CHANNEL, threadTs }),
});

/** The texts of the session's tool results. */
async function toolResults(ref: { tenantId: string; sessionId: string }): Promise<string[]> {
  return messagesOf(await api.stage.entries(ref)).flatMap((m) =>
    m.role === "toolResult" ? m.content.flatMap((block) => (block.type === "text" ? [block.text] : [])) : [],
  );
}

test("an event of an unmapped team is acknowledged, logged and starts nothing", async () => {
  const logged: Record<string, unknown>[] = [];
  const call = api.callerWith({ log: (record) => logged.push(record) });
  const threadTs = `${Date.now() / 1000}`;
  const body = JSON.stringify(
    eventCallback(
      { type: "app_mention", text: `<@${BOT_USER}> cat /proc/$PPID/environ`, ts: threadTs },
      UNMAPPED_TEAM,
    ),
  );
  const response = await call("POST", "/v1/integrations/slack/events", {
    key: null,
    body,
    headers: signedHeaders(body),
  });
  expect(response.status).toBe(200);
  expect(response.body).toEqual({ ok: true });
  expect(logged).toEqual([expect.objectContaining({ level: "warn", teamId: UNMAPPED_TEAM })]);
  for (const tenantId of [api.tenants.a, api.tenants.b]) {
    const ref = threadRef(threadTs, UNMAPPED_TEAM, tenantId);
    expect(await readSlackThread(api.objects, ref)).toBeUndefined();
    await expect(api.stage.client.workflow.getHandle(runWorkflowId(ref)).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
  }
});

test("a mapped team's run is its tenant's, with the team's tools: read-only by default", async () => {
  api.stage.llm.addScenario("slack-readonly", {
    turns: [{ toolCalls: [{ name: "write", arguments: { path: "pwned.txt", content: "x" } }] }],
    after: { text: "done" },
  });
  const threadTs = `${Date.now() / 1000}`;
  await postEvent(
    eventCallback({ type: "app_mention", text: `<@${BOT_USER}> [scenario:slack-readonly] go`, ts: threadTs }),
  );
  const ref = threadRef(threadTs);
  expect((await api.stage.result(ref)).status).toBe("completed");
  // The team's tools are read-only: write is not one of them, so it is refused before the policy.
  expect(await toolResults(ref)).toEqual([
    "Tool call refused: write is not one of this run's tools (read, grep, find, ls).",
  ]);
  expect(
    existsSync(join(workspaceFor(api.stage.workspaceRoot, ref.tenantId, ref.sessionId).dir, "pwned.txt")),
  ).toBe(false);
});

test("a team mapped with allow/ask lists: its tenant's session, bash waits for an approval, write is denied", async () => {
  api.stage.llm.addScenario("slack-asking", {
    turns: [
      {
        toolCalls: [
          { name: "write", arguments: { path: "w.txt", content: "x" } },
          { name: "bash", arguments: { command: "echo approved > b.txt" } },
        ],
      },
    ],
    after: { text: "done" },
  });
  const threadTs = `${Date.now() / 1000}`;
  const mention = eventCallback(
    { type: "app_mention", text: `<@${BOT_USER}> [scenario:slack-asking] go`, ts: threadTs },
    ASKING_TEAM,
  );
  expect((await postEvent(mention)).status).toBe(200);
  const ref = threadRef(threadTs, ASKING_TEAM, api.tenants.b);
  // Tenant A's key does not see tenant B's session.
  const path = `/v1/sessions/${ref.sessionId}`;
  // The batch runs in parallel: bash can wait for its approval while write's refusal is still
  // being stored (write shows as pending until then).
  const pending = await eventually(async () => {
    const view = await api.call("GET", path, { key: api.keys.b });
    const calls = view.body?.status === "waiting_approval" ? view.body.run.pendingToolCalls : undefined;
    return calls?.length === 1 ? calls : undefined;
  });
  expect(pending).toEqual([expect.objectContaining({ name: "bash", state: "awaiting_approval" })]);
  expectProblem(await api.call("GET", path), 404, "session-not-found");
  const bash = pending[0].toolCallId as string;
  expect(
    (await api.call("POST", `${path}/approvals/${bash}`, { key: api.keys.b, json: { decision: "approve" } }))
      .status,
  ).toBe(202);
  expect((await api.stage.result(ref)).status).toBe("completed");
  const results = await toolResults(ref);
  expect(results).toContain("Tool call refused: write is not one of this run's tools (read, ls, bash).");
  const dir = workspaceFor(api.stage.workspaceRoot, ref.tenantId, ref.sessionId).dir;
  expect(existsSync(join(dir, "w.txt"))).toBe(false);
  expect(existsSync(join(dir, "b.txt"))).toBe(true);
});

test("signatures: valid passes; wrong secret, stale timestamp, replayed old request and missing headers are 401", async () => {
  const challenge = { type: "url_verification", challenge: "c-123" };
  const ok = await postEvent(challenge);
  expect(ok.status).toBe(200);
  expect(ok.body).toEqual({ challenge: "c-123" });

  expectProblem(await postEvent(challenge, { secret: "wrong" }), 401, "invalid-signature");
  const sixMinutesAgo = Math.floor(Date.now() / 1000) - 6 * 60;
  expectProblem(await postEvent(challenge, { timestamp: sixMinutesAgo }), 401, "invalid-signature");
  expectProblem(await postEvent(challenge, { timestamp: sixMinutesAgo + 12 * 60 }), 401, "invalid-signature");

  // A request captured with its valid signature and replayed later carries its old timestamp.
  const body = JSON.stringify(challenge);
  const captured = signedHeaders(body, { timestamp: sixMinutesAgo });
  expectProblem(
    await api.call("POST", "/v1/integrations/slack/events", { key: null, body, headers: captured }),
    401,
    "invalid-signature",
  );
  // Tampering with the body breaks the signature.
  const fresh = signedHeaders(body);
  expectProblem(
    await api.call("POST", "/v1/integrations/slack/events", {
      key: null,
      body: body.replace("c-123", "c-999"),
      headers: fresh,
    }),
    401,
    "invalid-signature",
  );
  expectProblem(
    await api.call("POST", "/v1/integrations/slack/events", {
      key: null,
      body,
      headers: { "content-type": "application/json" },
    }),
    401,
    "invalid-signature",
  );
  const { "x-slack-signature": _dropped, ...noSignature } = fresh;
  expectProblem(
    await api.call("POST", "/v1/integrations/slack/events", { key: null, body, headers: noSignature }),
    401,
    "invalid-signature",
  );
});

test("a mention starts a run in the thread's session; thread messages steer; a retried event is handled once", async () => {
  slowEchoScenario(api.stage, "slack-slow", 1_500);
  const threadTs = `${Date.now() / 1000}`;
  const mention = eventCallback({
    type: "app_mention",
    text: `<@${BOT_USER}> [scenario:slack-slow] fix the build`,
    ts: threadTs,
  });
  expect((await postEvent(mention)).status).toBe(200);
  const ref = threadRef(threadTs);
  expect(await readSlackThread(api.objects, ref)).toEqual({ teamId: TEAM, channel: CHANNEL, threadTs });
  await eventually(async () => ((await api.stage.runs.state(ref))?.status === "running" ? true : undefined));

  // Slack retries an event it thinks was not acknowledged: same event id, delivered once.
  expect((await postEvent(mention)).status).toBe(200);
  const steer = eventCallback({ type: "message", text: "use the lockfile", thread_ts: threadTs });
  expect((await postEvent(steer)).status).toBe(200);
  // A message mentioning the bot arrives twice (app_mention and message); the message copy is skipped.
  const duplicate = eventCallback({
    type: "message",
    text: `<@${BOT_USER}> ignored copy`,
    thread_ts: threadTs,
  });
  expect((await postEvent(duplicate)).status).toBe(200);
  // Bot messages (the run's own replies) are ignored.
  expect(
    (await postEvent(eventCallback({ type: "message", text: "bot", bot_id: "B1", thread_ts: threadTs })))
      .status,
  ).toBe(200);

  expect((await api.stage.result(ref)).status).toBe("completed");
  const users = messagesOf(await api.stage.entries(ref)).flatMap((m) =>
    m.role === "user" && typeof m.content === "string" ? [m.content] : [],
  );
  expect(users).toEqual(["[scenario:slack-slow] fix the build", "use the lockfile"]);
  // The worker posts the run's final answer into the thread, once.
  const answers = await eventually(async () => {
    const found = slack.posts.filter(
      (post) => post.body.thread_ts === threadTs && post.authorization === "Bearer xoxb-worker",
    );
    return found.length > 0 ? found : undefined;
  });
  expect(answers.map((post) => [post.body.channel, post.body.text])).toEqual([
    [CHANNEL, "You said: use the lockfile"],
  ]);

  // Idle again: the next thread message starts a new run in the same session.
  expect(
    (await postEvent(eventCallback({ type: "message", text: "and now?", thread_ts: threadTs }))).status,
  ).toBe(200);
  await eventually(async () => {
    const texts = messagesOf(await api.stage.entries(ref)).flatMap((m) =>
      m.role === "user" && typeof m.content === "string" ? [m.content] : [],
    );
    return texts.includes("and now?") ? true : undefined;
  });
});

test("a retried event whose first delivery's answer was lost is delivered once", async () => {
  slowEchoScenario(api.stage, "slack-lost", 1_500);
  let lost = false;
  // The first delivery reaches Temporal, then its answer is lost (a Temporal restart looks like this).
  const client = new Client({
    connection: api.stage.client.connection,
    namespace: temporalNamespace(),
    dataConverter: keelDataConverter(s3, s3Settings()),
    interceptors: {
      workflow: [
        {
          startUpdateWithStart: async (input, next) => {
            const output = await next(input);
            if (!lost) {
              lost = true;
              throw Object.assign(new Error("14 UNAVAILABLE: Connection dropped"), { code: 14 });
            }
            return output;
          },
        },
      ],
    },
  });
  const call = api.callerWith({ runs: async () => new RunClient(client, api.stage.taskQueue) });
  const threadTs = `${Date.now() / 1000 + 2}`;
  const body = JSON.stringify(
    eventCallback({ type: "app_mention", text: `<@${BOT_USER}> [scenario:slack-lost] once`, ts: threadTs }),
  );
  const post = () =>
    call("POST", "/v1/integrations/slack/events", { key: null, body, headers: signedHeaders(body) });
  expectProblem(await post(), 503, "temporal-unavailable");
  // Slack retries the same signed event.
  expect((await post()).status).toBe(200);
  const ref = threadRef(threadTs);
  expect((await api.stage.result(ref)).status).toBe("completed");
  // Messages of one turn share a user entry (content blocks): every text is counted.
  const users = messagesOf(await api.stage.entries(ref)).flatMap((m) => {
    if (m.role !== "user") return [];
    if (typeof m.content === "string") return [m.content];
    return m.content.flatMap((block) => (block.type === "text" ? [block.text] : []));
  });
  expect(users).toEqual(["[scenario:slack-lost] once"]);
});

test("a message in a thread without a session is ignored; the stop word aborts the thread's run", async () => {
  const unmapped = `${Date.now() / 1000}`;
  expect(
    (await postEvent(eventCallback({ type: "message", text: "hello?", thread_ts: unmapped }))).status,
  ).toBe(200);
  expect(await api.stage.runs.state(threadRef(unmapped))).toBeUndefined();

  api.stage.llm.addScenario("slack-hung", { turns: [], after: { text: "You said: {{lastUser}}" } });
  api.stage.llm.addFaults([{ kind: "hang", match: { scenario: "slack-hung" } }]);
  const threadTs = `${Date.now() / 1000 + 1}`;
  await postEvent(
    eventCallback({ type: "app_mention", text: `<@${BOT_USER}> [scenario:slack-hung] think`, ts: threadTs }),
  );
  const ref = threadRef(threadTs);
  await modelCalled(api.stage, "slack-hung");
  expect(
    (await postEvent(eventCallback({ type: "message", text: " STOP ", thread_ts: threadTs }))).status,
  ).toBe(200);
  expect((await api.stage.result(ref)).status).toBe("aborted");
});

test("postSlackReply posts into the thread through the Web API client at the configured base URL", async () => {
  await postSlackReply(
    { channel: CHANNEL, threadTs: "1700000000.000100", text: "All tests pass." },
    { token: "xoxb-test", apiUrl: slack.url },
  );
  expect(slack.posts.at(-1)).toEqual({
    authorization: "Bearer xoxb-test",
    body: expect.objectContaining({
      channel: CHANNEL,
      thread_ts: "1700000000.000100",
      text: "All tests pass.",
    }),
  });
});

/** A Slack team id no earlier run of these tests has claimed (claims stay in the bucket). */
function freshTeamId(): string {
  return `T${Date.now().toString(36).toUpperCase()}${Math.floor(Math.random() * 36 ** 4)
    .toString(36)
    .toUpperCase()}`;
}

const admin = (method: string, path: string, json?: unknown) =>
  api.call(method, `/v1/admin/tenants${path}`, {
    key: api.adminKey,
    ...(json !== undefined ? { json } : {}),
  });

/** A tenant made through the admin API, with one API key. */
async function adminTenant(): Promise<{ tenantId: string; key: string }> {
  const tenantId = uniqueName("slacktenant");
  expect((await admin("POST", "", { id: tenantId })).status).toBe(201);
  const created = await admin("POST", `/${tenantId}/keys`, {});
  expect(created.status).toBe(201);
  return { tenantId, key: created.body.key as string };
}

const slackSettings = (teams: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  ...extra,
  slack: { teams },
});

/** A mention in a new thread of `team`; its thread ts. */
async function mention(team: string, text: string): Promise<string> {
  const threadTs = `${Date.now() / 1000 + Math.random()}`;
  expect(
    (
      await postEvent(
        eventCallback({ type: "app_mention", text: `<@${BOT_USER}> ${text}`, ts: threadTs }, team),
      )
    ).status,
  ).toBe(200);
  return threadTs;
}

test("a team mapped in tenant settings reaches that tenant; a team mapped elsewhere is refused; unmapping takes effect within seconds", async () => {
  const owner = await adminTenant();
  const rival = await adminTenant();
  const team = freshTeamId();
  const stored = await admin("PUT", `/${owner.tenantId}/settings`, slackSettings({ [team]: {} }));
  expect(stored.status).toBe(200);
  // Without lists, the read-only tools, as in the operator's mapping.
  expect((await admin("GET", `/${owner.tenantId}/settings`)).body).toEqual({
    slack: { teams: { [team]: { allow: ["read", "grep", "find", "ls"], ask: [] } } },
  });

  // The same team for another tenant: refused, naming the team; nothing of the rival's changes.
  const taken = await admin(
    "PUT",
    `/${rival.tenantId}/settings`,
    slackSettings({ [team]: { allow: ["read"] } }),
  );
  expectProblem(taken, 409, "slack-team-taken");
  expect(taken.body.teams).toEqual([team]);
  expect(taken.body.detail).toContain(`tenant ${owner.tenantId}`);
  expect((await admin("GET", `/${rival.tenantId}/settings`)).body).toEqual({});
  // A team of the operator's KEEL_SLACK_TEAMS is not a tenant's to take (the operator's mapping wins).
  expectProblem(
    await admin("PUT", `/${rival.tenantId}/settings`, slackSettings({ [TEAM]: {} })),
    409,
    "slack-team-taken",
  );
  // Invalid lists are refused as in the operator's mapping.
  expectProblem(
    await admin(
      "PUT",
      `/${rival.tenantId}/settings`,
      slackSettings({ [team]: { allow: ["ls"], ask: ["ls"] } }),
    ),
    400,
    "invalid-request",
  );

  // Two admins mapping one new team to two tenants at once: exactly one wins.
  const raced = freshTeamId();
  const answers = await Promise.all([
    admin("PUT", `/${owner.tenantId}/settings`, slackSettings({ [team]: {}, [raced]: {} })),
    admin("PUT", `/${rival.tenantId}/settings`, slackSettings({ [raced]: {} })),
  ]);
  expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
  expect(answers.find((answer) => answer.status === 409)?.body.teams).toEqual([raced]);
  const winner = answers[0]?.status === 200 ? owner : rival;
  const loser = winner === owner ? rival : owner;
  expect((await admin("GET", `/${winner.tenantId}/settings`)).body.slack.teams).toHaveProperty(raced);
  expect((await admin("GET", `/${loser.tenantId}/settings`)).body.slack?.teams ?? {}).not.toHaveProperty(
    raced,
  );

  // The team's events start runs under the owner's tenant, with its read-only tools.
  api.stage.llm.addScenario("slack-settings-team", { turns: [], after: { text: "hello from settings" } });
  const threadTs = await mention(team, "[scenario:slack-settings-team] hi");
  const ref = threadRef(threadTs, team, owner.tenantId);
  expect((await api.stage.result(ref)).status).toBe("completed");
  const view = await api.call("GET", `/v1/sessions/${ref.sessionId}`, { key: owner.key });
  expect(view.status).toBe(200);
  expectProblem(
    await api.call("GET", `/v1/sessions/${ref.sessionId}`, { key: rival.key }),
    404,
    "session-not-found",
  );

  // Unmapped: within the cache's seconds its events start nothing, and the rival may take it.
  expect((await admin("PUT", `/${owner.tenantId}/settings`, {})).status).toBe(200);
  expect((await admin("PUT", `/${rival.tenantId}/settings`, slackSettings({ [team]: {} }))).status).toBe(200);
  const later = await eventually(
    async () => {
      const ts = await mention(team, "[scenario:slack-settings-team] again");
      const rivalRef = threadRef(ts, team, rival.tenantId);
      return (await readSlackThread(api.objects, rivalRef)) ? { ts, rivalRef } : undefined;
    },
    15_000,
    "the team reached its new tenant",
  );
  expect(await readSlackThread(api.objects, threadRef(later.ts, team, owner.tenantId))).toBeUndefined();
  expect((await api.stage.result(later.rivalRef)).status).toBe("completed");
});

/**
 * A run of a team mapped in a new tenant's settings whose default budget the first model call
 * reaches: paused, with its pause announced in the thread.
 */
async function pausedSlackRun(scenario: string) {
  const tenant = await adminTenant();
  const team = freshTeamId();
  // Slack runs take the tenant's default limits: a budget the first model call already reaches.
  const settings = slackSettings({ [team]: {} }, { defaults: { limits: { maxCostUsd: 0.000001 } } });
  expect((await admin("PUT", `/${tenant.tenantId}/settings`, settings)).status).toBe(200);
  api.stage.llm.addScenario(scenario, {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "all listed" },
  });
  const threadTs = await mention(team, `[scenario:${scenario}] list`);
  const ref = threadRef(threadTs, team, tenant.tenantId);
  const postsIn = (predicate: (text: string) => boolean) =>
    slack.posts.filter((post) => post.body.thread_ts === threadTs && predicate(post.body.text ?? ""));
  // The worker announces the pause in the thread: which budget, how to go on.
  const [notice] = await eventually(
    async () => {
      const found = postsIn((text) => text.startsWith("Paused:"));
      return found.length > 0 ? found : undefined;
    },
    30_000,
    "the pause was announced",
  );
  expect(notice?.authorization).toBe("Bearer xoxb-worker");
  expect(notice?.body.text).toMatch(
    /^Paused: cost budget reached \(\$0\.000001; used \$[\d.]+\)\. Reply `budget <usd>` \(e\.g\. `budget 5`\) to raise the cost budget, or `resume` to go on without it\. Without an answer the run ends at \d{4}-/,
  );
  expect((await api.stage.runs.state(ref))?.status).toBe("paused");
  return { team, threadTs, ref, postsIn };
}

test("a run paused at its budget says so in the thread; a reply from another team is refused; `resume` lets it finish", async () => {
  const { team, threadTs, ref, postsIn } = await pausedSlackRun("slack-pause");

  // The same thread's reply as another team's event reaches that team's own session: nothing.
  expect(
    (await postEvent(eventCallback({ type: "message", text: "resume", thread_ts: threadTs }, TEAM))).status,
  ).toBe(200);
  // An author of another organisation in a shared channel (Slack Connect): refused, said so.
  const foreign = eventCallback(
    { type: "message", text: "budget 100", thread_ts: threadTs, user_team: TEAM },
    team,
  );
  expect((await postEvent(foreign)).status).toBe(200);
  expect(postsIn((text) => text === FOREIGN_AUTHOR_TEXT)).toHaveLength(1);
  const paused = await api.stage.runs.state(ref);
  expect(paused).toMatchObject({ status: "paused", budget: { maxCostUsd: 0.000001 } });
  expect(await readSlackThread(api.objects, threadRef(threadTs, TEAM, api.tenants.a))).toBeUndefined();

  // The team's own `resume`: the API's resume path; the run finishes and answers in the thread.
  expect(
    (await postEvent(eventCallback({ type: "message", text: " Resume ", thread_ts: threadTs }, team))).status,
  ).toBe(200);
  expect(await api.stage.result(ref)).toMatchObject({ status: "completed", reason: "the agent finished" });
  expect(postsIn((text) => text.startsWith("The run goes on"))).toHaveLength(1);
  await eventually(async () => (postsIn((text) => text === "all listed").length === 1 ? true : undefined));
  expect(postsIn((text) => text.startsWith("Paused:"))).toHaveLength(1);
  const entries = await expectIntactSession(api.stage, ref);
  expect(messagesOf(entries).map((message) => message.role)).toEqual([
    "user",
    "assistant",
    "toolResult",
    "assistant",
  ]);
  // `resume` was a budget reply, not a message to the run.
  expect(
    messagesOf(entries)
      .filter((message) => message.role === "user")
      .map((message) => message.content),
  ).toEqual(["[scenario:slack-pause] list"]);
  const types = (await api.stage.runs.events(ref, 0)).map((event) => event.type);
  expect(types.indexOf("run_resumed")).toBeGreaterThan(types.indexOf("run_paused"));
});

test("`budget <usd>` in the thread raises the paused run's cost budget and it finishes", async () => {
  const { team, threadTs, ref, postsIn } = await pausedSlackRun("slack-raise");
  expect(
    (await postEvent(eventCallback({ type: "message", text: "budget $5", thread_ts: threadTs }, team)))
      .status,
  ).toBe(200);
  expect(await api.stage.result(ref)).toMatchObject({ status: "completed", reason: "the agent finished" });
  expect(postsIn((text) => text.startsWith("The run goes on"))).toEqual([
    expect.objectContaining({
      body: expect.objectContaining({ text: "The run goes on (cost budget $5, token budget none)." }),
    }),
  ]);
  expect((await api.stage.runs.state(ref))?.budget).toEqual({ maxCostUsd: 5, maxTokens: 0 });
  await expectIntactSession(api.stage, ref);
});

test("a tenant whose settings refuse the deployment's default model starts no run from Slack, and says why", async () => {
  const tenant = await adminTenant();
  const team = freshTeamId();
  const settings = slackSettings({ [team]: {} }, { models: ["some-other-model"] });
  expect((await admin("PUT", `/${tenant.tenantId}/settings`, settings)).status).toBe(200);
  const threadTs = await mention(team, "hello");
  const ref = threadRef(threadTs, team, tenant.tenantId);
  const refusal = await eventually(async () =>
    slack.posts.find((post) => post.body.thread_ts === threadTs && post.authorization === "Bearer xoxb-test"),
  );
  expect(refusal.body.text).toBe(
    'The message was not delivered: The model "local-chat" is not among this tenant\'s allowed models (tenant setting `models`).',
  );
  expect(await api.stage.runs.state(ref)).toBeUndefined();
  expect(await readSlackThread(api.objects, ref)).toBeUndefined();
});

test("a start from Slack is admitted under the tenant's quotas: over one, no run starts and the thread says which", async () => {
  const tenant = await adminTenant();
  const team = freshTeamId();
  const settings = slackSettings({ [team]: {} }, { quotas: { concurrentRuns: 0 } });
  expect((await admin("PUT", `/${tenant.tenantId}/settings`, settings)).status).toBe(200);
  const threadTs = await mention(team, "hello");
  const ref = threadRef(threadTs, team, tenant.tenantId);
  const refusal = await eventually(async () =>
    slack.posts.find((post) => post.body.thread_ts === threadTs && post.authorization === "Bearer xoxb-test"),
  );
  expect(refusal.body.text).toMatch(
    /^The message was not delivered: The tenant's quota concurrentRuns \(0\) is reached; retry after \d+ s\.$/,
  );
  expect(await api.stage.runs.state(ref)).toBeUndefined();
  expect(await readSlackThread(api.objects, ref)).toBeUndefined();
});

test("Slack starts take the tenant's default environment: one that does not exist is answered in the thread, nothing starts", async () => {
  const tenant = await adminTenant();
  const team = freshTeamId();
  const settings = slackSettings({ [team]: {} }, { defaults: { environment: "nowhere" } });
  expect((await admin("PUT", `/${tenant.tenantId}/settings`, settings)).status).toBe(200);
  const threadTs = await mention(team, "[scenario:slack-settings-team] hi");
  const [refusal] = await eventually(
    async () => {
      const found = slack.posts.filter((post) => post.body.thread_ts === threadTs);
      return found.length > 0 ? found : undefined;
    },
    15_000,
    "the refusal was posted",
  );
  expect(refusal?.body.text).toBe(
    'The message was not delivered: No environment "nowhere": keel env list shows yours.',
  );
  const ref = threadRef(threadTs, team, tenant.tenantId);
  expect(await readSlackThread(api.objects, ref)).toBeUndefined();
  expectProblem(
    await api.call("GET", `/v1/sessions/${ref.sessionId}`, { key: tenant.key }),
    404,
    "session-not-found",
  );
});

test("a Slack start takes the API's start path: at the concurrent-run quota it is refused as the API's message is and takes no slot; started, it holds the slot and is counted as an API start", async () => {
  const tenant = await api.storedTenant();
  const team = freshTeamId();
  const settings = slackSettings(
    { [team]: { allow: ["read"], ask: ["bash"] } },
    { quotas: { concurrentRuns: 1 } },
  );
  expect((await admin("PUT", `/${tenant.tenantId}/settings`, settings)).status).toBe(200);
  const message = (sessionId: string, json: Record<string, unknown>) =>
    api.call("POST", `/v1/sessions/${sessionId}/messages`, { key: tenant.key, json });

  // An API start holds the one slot.
  const held = { tenantId: tenant.tenantId, sessionId: api.sessionId() };
  expect((await message(held.sessionId, api.waitingRunBody())).status).toBe(202);
  await api.untilWaitingForApproval(held);

  // A mention now is refused for the same quota, and its refusal takes nothing: the slot is the API run's.
  const refusedTs = await mention(team, `[scenario:${api.waitingScenario()}] go`);
  const refusal = await eventually(async () => slack.posts.find((post) => post.body.thread_ts === refusedTs));
  expect(refusal.body.text).toMatch(
    /^The message was not delivered: The tenant's quota concurrentRuns \(1\) is reached; retry after \d+ s\.$/,
  );
  const refusedRef = threadRef(refusedTs, team, tenant.tenantId);
  expect(await api.stage.runs.state(refusedRef)).toBeUndefined();
  expect(await readSlackThread(api.objects, refusedRef)).toBeUndefined();
  expect(await api.slotHolders(tenant.tenantId, 1)).toEqual([held.sessionId]);
  expect(await api.runsCounted(tenant.key)).toBe(1);

  // Once the API's run has ended, a mention starts a run that holds the slot: now the API is refused.
  await api.stage.runs.signalAbort(held, "make room");
  expect((await api.stage.result(held)).status).toBe("aborted");
  const startedRef = threadRef(
    await mention(team, `[scenario:${api.waitingScenario()}] go`),
    team,
    tenant.tenantId,
  );
  try {
    await api.untilWaitingForApproval(startedRef);
    expect(await api.slotHolders(tenant.tenantId, 1)).toEqual([startedRef.sessionId]);
    expect(await api.runsCounted(tenant.key)).toBe(2);
    const refusedByApi = await message(api.sessionId(), { text: "hi" });
    expectProblem(refusedByApi, 429, "quota-exceeded");
    expect(refusedByApi.body).toMatchObject({ quota: "concurrentRuns", limit: 1 });
  } finally {
    await api.stage.runs.signalAbort(startedRef, "test over");
  }
  expect((await api.stage.result(startedRef)).status).toBe("aborted");
});
