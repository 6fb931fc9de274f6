/**
 * Session data through the API (entries, export/import, fork, branch, compact), tenant isolation,
 * idempotency, problem documents, limits and the OpenAPI document.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FORKED_TOOL_RESULT_TEXT } from "../../../src/core/markers";
import { convertToLlm } from "../../../src/core/messages";
import { checkInvariants } from "../../../src/core/sanitize";
import { parseSession } from "../../../src/core/session-codec";
import { FOLLOWS_RUN_MEMO } from "../../../src/run-client/session-runs";
import { WorkflowType } from "../../../src/workflows/references";
import { eventually, messagesOf } from "../../support/run-harness";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;

beforeAll(async () => {
  api = await createApiStage();
});

afterAll(async () => {
  await api?.close();
});

const fixture = (name: string) => readFileSync(join(__dirname, "../../fixtures/sessions", name), "utf8");
const ndjson = { "content-type": "application/x-ndjson" };

/** A session with a finished run, created through the API. */
async function finishedSession(text = "hello"): Promise<string> {
  const sessionId = api.sessionId();
  expect((await api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: { text } })).status).toBe(202);
  await api.stage.result({ tenantId: api.tenants.a, sessionId });
  return sessionId;
}

function withoutHeader(jsonl: string): string[] {
  return jsonl.trimEnd().split("\n").slice(1);
}

test("export gives one pi JSONL file; importing it gives a new session with the same entries", async () => {
  const sessionId = await finishedSession("export me");
  const exported = await api.call("GET", `/v1/sessions/${sessionId}/export`);
  expect(exported.status).toBe(200);
  expect(exported.headers.get("content-type")).toBe("application/x-ndjson");
  const header = JSON.parse(exported.text.split("\n")[0]!);
  expect(header).toMatchObject({ type: "session", version: 3, id: sessionId });

  const imported = await api.call("POST", "/v1/sessions/import", { body: exported.text, headers: ndjson });
  expect(imported.status).toBe(201);
  expect(imported.body.sessionId).not.toBe(sessionId);
  expect(imported.body.entryCount).toBe(2);
  const again = await api.call("GET", `/v1/sessions/${imported.body.sessionId}/export`);
  expect(withoutHeader(again.text)).toEqual(withoutHeader(exported.text));
  expect(JSON.parse(again.text.split("\n")[0]!).id).toBe(imported.body.sessionId);

  // The imported session continues where the file ended.
  const next = await api.call("POST", `/v1/sessions/${imported.body.sessionId}/messages`, {
    json: { text: "more" },
  });
  expect(next.body.delivery).toBe("started");
  await api.stage.result({ tenantId: api.tenants.a, sessionId: imported.body.sessionId });
  const messages = messagesOf(
    await api.stage.entries({ tenantId: api.tenants.a, sessionId: imported.body.sessionId }),
  );
  expect(messages).toHaveLength(4);
});

test("a pi file with branches and labels survives import and export byte for byte (after the header)", async () => {
  const text = fixture("branches-labels.jsonl");
  const imported = await api.call("POST", "/v1/sessions/import", { body: text, headers: ndjson });
  expect(imported.status).toBe(201);
  const exported = await api.call("GET", `/v1/sessions/${imported.body.sessionId}/export`);
  expect(withoutHeader(exported.text)).toEqual(withoutHeader(text));
});

test("a label on an imported session that never had a run: the task records none, and the view shows no run", async () => {
  const imported = await api.call("POST", "/v1/sessions/import", {
    body: fixture("branches-labels.jsonl"),
    headers: ndjson,
  });
  const { sessionId, leafId } = imported.body;
  const labelled = await api.call("POST", `/v1/sessions/${sessionId}/labels`, {
    json: { entryId: leafId, label: "imported" },
  });
  expect(labelled.status).toBe(201);
  const task = await api.stage.runs.handle({ tenantId: api.tenants.a, sessionId }).describe();
  expect(task.memo).toEqual({ [FOLLOWS_RUN_MEMO]: "" });
  const view = await api.call("GET", `/v1/sessions/${sessionId}`);
  expect(view.body).toMatchObject({ status: "idle", maintenance: { kind: "label", status: "completed" } });
  expect(view.body).not.toHaveProperty("run");
});

test("the wire-format session JSON imports through its adapter; bad files are 400, other media types 415", async () => {
  const imported = await api.call("POST", "/v1/sessions/import", {
    body: fixture("wire-session.json"),
    headers: { "content-type": "application/json" },
  });
  expect(imported.status).toBe(201);
  const entries = await api.stage.entries({ tenantId: api.tenants.a, sessionId: imported.body.sessionId });
  expect(messagesOf(entries).length).toBeGreaterThan(2);
  expect(entries[0]).toMatchObject({ type: "custom", customType: "keel.wire-session" });

  expectProblem(
    await api.call("POST", "/v1/sessions/import", { body: "not a session\n", headers: ndjson }),
    400,
    "invalid-session-file",
  );
  expectProblem(await api.call("POST", "/v1/sessions/import", { json: [1, 2] }), 400, "invalid-session-file");
  expectProblem(
    await api.call("POST", "/v1/sessions/import", {
      body: "{",
      headers: { "content-type": "application/json" },
    }),
    400,
    "malformed-body",
  );
  expectProblem(
    await api.call("POST", "/v1/sessions/import", { body: "x", headers: { "content-type": "image/png" } }),
    415,
    "unsupported-media-type",
  );
});

test("entries are paged in sequence order", async () => {
  const imported = await api.call("POST", "/v1/sessions/import", {
    body: fixture("branches-labels.jsonl"),
    headers: ndjson,
  });
  const sessionId = imported.body.sessionId;
  const seen: number[] = [];
  let after: number | undefined;
  for (;;) {
    const page = await api.call(
      "GET",
      `/v1/sessions/${sessionId}/entries?limit=3${after === undefined ? "" : `&after=${after}`}`,
    );
    expect(page.status).toBe(200);
    seen.push(...page.body.entries.map((stored: { seq: number }) => stored.seq));
    if (page.body.nextAfter === undefined) break;
    after = page.body.nextAfter;
  }
  expect(seen).toEqual([...Array(imported.body.entryCount).keys()]);
  expectProblem(await api.call("GET", `/v1/sessions/${sessionId}/entries?limit=0`), 400, "invalid-request");
});

test("fork makes a new session holding the root-to-entry path, with parentSession set", async () => {
  const text = fixture("branches-labels.jsonl");
  const source = (await api.call("POST", "/v1/sessions/import", { body: text, headers: ndjson })).body
    .sessionId;
  const entries = withoutHeader(text).map((line) => JSON.parse(line));
  const target = entries[Math.floor(entries.length / 2)];
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  const expectedPath: string[] = [];
  for (let current = target; current; current = byId.get(current.parentId)) expectedPath.unshift(current.id);

  const forked = await api.call("POST", `/v1/sessions/${source}/fork`, { json: { entryId: target.id } });
  expect(forked.status).toBe(201);
  expect(forked.body).toMatchObject({
    parentSession: source,
    leafId: target.id,
    entryCount: expectedPath.length,
  });
  const exported = await api.call("GET", `/v1/sessions/${forked.body.sessionId}/export`);
  expect(JSON.parse(exported.text.split("\n")[0]!)).toMatchObject({
    id: forked.body.sessionId,
    parentSession: source,
  });
  expect(withoutHeader(exported.text).map((line) => JSON.parse(line).id)).toEqual(expectedPath);
  const view = await api.call("GET", `/v1/sessions/${forked.body.sessionId}`);
  expect(view.body).toMatchObject({ status: "idle", parentSession: source, leafId: target.id });

  expectProblem(
    await api.call("POST", `/v1/sessions/${source}/fork`, { json: { entryId: "nope" } }),
    404,
    "entry-not-found",
  );
});

test("fork at an assistant entry with tool calls closes them in the new session, so its export keeps the tool-call invariant", async () => {
  api.stage.llm.addScenario("fork-tools", {
    turns: [
      {
        toolCalls: [
          { name: "ls", arguments: {} },
          { name: "ls", arguments: { path: "." } },
        ],
      },
    ],
    after: { text: "done" },
  });
  const source = await finishedSession("[scenario:fork-tools] look around");
  const { entries } = await api.stage.store.readEntries({ tenantId: api.tenants.a, sessionId: source });
  const calling = entries.find(
    ({ entry }) =>
      entry.type === "message" &&
      entry.message.role === "assistant" &&
      entry.message.content.some((block) => block.type === "toolCall"),
  )?.entry;
  expect(calling).toBeDefined();

  const forked = await api.call("POST", `/v1/sessions/${source}/fork`, { json: { entryId: calling!.id } });
  expect(forked.status).toBe(201);
  const exported = await api.call("GET", `/v1/sessions/${forked.body.sessionId}/export`);
  const parsed = parseSession(exported.text);
  expect(parsed.errors).toEqual([]);
  const messages = messagesOf(parsed.entries);
  expect(checkInvariants(convertToLlm(messages))).toEqual([]);
  // The two calls are answered by errors saying they were not run in the fork, below the fork's entry.
  const closing = parsed.entries.slice(parsed.entries.findIndex((entry) => entry.id === calling!.id) + 1);
  expect(closing).toHaveLength(2);
  expect(closing[0]!.parentId).toBe(calling!.id);
  expect(closing.map((entry) => (entry.type === "message" ? entry.message : undefined))).toEqual([
    expect.objectContaining({
      role: "toolResult",
      isError: true,
      content: [{ type: "text", text: FORKED_TOOL_RESULT_TEXT }],
    }),
    expect.objectContaining({
      role: "toolResult",
      isError: true,
      content: [{ type: "text", text: FORKED_TOOL_RESULT_TEXT }],
    }),
  ]);
  expect(forked.body).toMatchObject({ leafId: closing[1]!.id, entryCount: parsed.entries.length });
});

test("labels: set and clear a label on an idle session; unknown entries are 404", async () => {
  const sessionId = await finishedSession("label me");
  const ref = { tenantId: api.tenants.a, sessionId };
  const [target] = await api.stage.entries(ref);
  const set = await api.call("POST", `/v1/sessions/${sessionId}/labels`, {
    json: { entryId: target!.id, label: "start" },
  });
  expect(set.status).toBe(201);
  expect(set.body).toMatchObject({ sessionId, targetId: target!.id, label: "start" });
  const cleared = await api.call("POST", `/v1/sessions/${sessionId}/labels`, {
    json: { entryId: target!.id },
  });
  expect(cleared.status).toBe(201);
  const entries = await api.stage.entries(ref);
  expect(entries.slice(-2)).toEqual([
    expect.objectContaining({ type: "label", id: set.body.entryId, targetId: target!.id, label: "start" }),
    expect.objectContaining({ type: "label", id: cleared.body.entryId, parentId: set.body.entryId }),
  ]);
  expect(entries.at(-1)).not.toHaveProperty("label");
  const view = await api.call("GET", `/v1/sessions/${sessionId}`);
  expect(view.body).toMatchObject({ leafId: cleared.body.entryId, status: "idle" });
  expectProblem(
    await api.call("POST", `/v1/sessions/${sessionId}/labels`, { json: { entryId: "nope" } }),
    404,
    "entry-not-found",
  );
});

test("after a branch and a compaction the session still shows its run and its events; the task shows as maintenance", async () => {
  const sessionId = api.sessionId();
  const started = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: { text: "remember me" },
  });
  expect(started.status).toBe(202);
  await api.stage.result({ tenantId: api.tenants.a, sessionId });
  const [first] = await api.stage.entries({ tenantId: api.tenants.a, sessionId });
  const before = await api.call("GET", `/v1/sessions/${sessionId}/events`);
  expect(before.body.events.length).toBeGreaterThan(0);

  for (const [path, body, kind] of [
    ["branch", { entryId: first!.id }, "branch"],
    ["compact", {}, "compact"],
  ] as const) {
    const done = await api.call("POST", `/v1/sessions/${sessionId}/${path}`, { json: body });
    expect(done.status).toBe(200);
    // Read your writes: the task recorded which run it follows, so the very next read shows that
    // run (Temporal's list of executions, which may lag a moment, is not asked).
    const task = await api.stage.runs.handle({ tenantId: api.tenants.a, sessionId }).describe();
    expect(task.memo).toEqual({ [FOLLOWS_RUN_MEMO]: started.body.runId });
    const view = await api.call("GET", `/v1/sessions/${sessionId}`);
    expect(view.body).toMatchObject({
      status: "idle",
      run: { runId: started.body.runId, status: "completed" },
      maintenance: { kind, status: "completed" },
    });
    const events = await api.call("GET", `/v1/sessions/${sessionId}/events`);
    expect(events.body).toMatchObject({
      events: before.body.events,
      runEnded: true,
      run: { status: "completed" },
    });
  }
});

test("branch moves the leaf (marker or LLM summary of the branch left) and the next message continues there", async () => {
  const sessionId = await finishedSession("first question");
  const ref = { tenantId: api.tenants.a, sessionId };
  expect(
    (await api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: { text: "second question" } }))
      .status,
  ).toBe(202);
  await api.stage.result(ref);
  const before = await api.stage.entries(ref);
  const firstAnswer = before[1]!;

  const moved = await api.call("POST", `/v1/sessions/${sessionId}/branch`, {
    json: { entryId: firstAnswer.id },
  });
  expect(moved.status).toBe(200);
  expect(moved.body).toMatchObject({ sessionId, summarized: false });
  expect((await api.call("GET", `/v1/sessions/${sessionId}`)).body.leafId).toBe(moved.body.leafId);
  const marker = (await api.stage.entries(ref)).at(-1);
  expect(marker).toMatchObject({ type: "custom", customType: "keel.leaf", parentId: firstAnswer.id });

  const summarized = await api.call("POST", `/v1/sessions/${sessionId}/branch`, {
    json: { entryId: firstAnswer.id, summarize: true },
  });
  expect(summarized.status).toBe(200);
  expect(summarized.body.summarized).toBe(true);
  const summary = (await api.stage.entries(ref)).at(-1);
  expect(summary).toMatchObject({
    type: "branch_summary",
    parentId: firstAnswer.id,
    id: summarized.body.leafId,
  });
  expect(summary?.type === "branch_summary" && summary.summary.length).toBeGreaterThan(0);

  expect(
    (await api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: { text: "third question" } }))
      .status,
  ).toBe(202);
  await api.stage.result(ref);
  const after = await api.stage.entries(ref);
  const third = after.find(
    (entry) =>
      entry.type === "message" && entry.message.role === "user" && entry.message.content === "third question",
  );
  expect(third?.parentId).toBe(summarized.body.leafId);

  expectProblem(
    await api.call("POST", `/v1/sessions/${sessionId}/branch`, { json: { entryId: "nope" } }),
    404,
    "entry-not-found",
  );
  expectProblem(
    await api.call("POST", `/v1/sessions/${sessionId}/branch`, { json: { summarize: "yes" } }),
    400,
    "invalid-request",
  );
});

test("compact runs on an idle session and is refused while a run is live", async () => {
  const sessionId = await finishedSession("compact me");
  const compacted = await api.call("POST", `/v1/sessions/${sessionId}/compact`, { json: {} });
  expect(compacted.status).toBe(200);
  // Two short messages are all inside the recent window that compaction keeps verbatim.
  expect(compacted.body).toMatchObject({ sessionId, compacted: false });
  expectProblem(
    await api.call("POST", `/v1/sessions/${sessionId}/compact`, { json: { instructions: 5 } }),
    400,
    "invalid-request",
  );
  api.stage.llm.addScenario("api-hang", { turns: [], after: { text: "late" } });
  api.stage.llm.addFaults([{ kind: "slow", match: { scenario: "api-hang" }, times: 1, latencyMs: 3_000 }]);
  const busy = api.sessionId();
  await api.call("POST", `/v1/sessions/${busy}/messages`, { json: { text: "[scenario:api-hang] wait" } });
  expectProblem(await api.call("POST", `/v1/sessions/${busy}/compact`, { json: {} }), 409, "run-busy");
  await api.stage.result({ tenantId: api.tenants.a, sessionId: busy });
});

test("a tenant never sees or touches another tenant's session: 404 on every route", async () => {
  const sessionId = await finishedSession("private");
  const leaf = (await api.call("GET", `/v1/sessions/${sessionId}`)).body.leafId;
  const b = { key: api.keys.b };
  const reads = ["", "/events", "/entries", "/export"];
  for (const suffix of reads) {
    expectProblem(await api.call("GET", `/v1/sessions/${sessionId}${suffix}`, b), 404, "session-not-found");
  }
  expectProblem(
    await api.call("GET", `/v1/sessions/${sessionId}/events`, {
      ...b,
      headers: { accept: "text/event-stream" },
    }),
    404,
    "session-not-found",
  );
  const writes: Array<[string, unknown]> = [
    ["/abort", {}],
    ["/approvals/call-1", { decision: "approve" }],
    ["/fork", { entryId: leaf }],
    ["/branch", { entryId: leaf }],
    ["/compact", {}],
  ];
  for (const [suffix, json] of writes) {
    expectProblem(
      await api.call("POST", `/v1/sessions/${sessionId}${suffix}`, { ...b, json }),
      404,
      "session-not-found",
    );
  }
  const listed = await api.call("GET", "/v1/sessions?limit=1000", b);
  expect(listed.body.sessions.map((s: { sessionId: string }) => s.sessionId)).not.toContain(sessionId);

  // The same id under tenant B is B's own session; A's is untouched.
  const before = await api.call("GET", `/v1/sessions/${sessionId}/export`);
  const own = await api.call("POST", `/v1/sessions/${sessionId}/messages`, { ...b, json: { text: "mine" } });
  expect(own.body).toMatchObject({
    delivery: "started",
    workflowId: `keel-run/${api.tenants.b}/${sessionId}`,
  });
  await api.stage.result({ tenantId: api.tenants.b, sessionId });
  expect((await api.call("GET", `/v1/sessions/${sessionId}/export`)).text).toBe(before.text);
});

test("Idempotency-Key: a retried POST returns the first response and starts no second run", async () => {
  api.stage.llm.addScenario("api-idem", { turns: [], after: { text: "You said: {{lastUser}}" } });
  const sessionId = api.sessionId();
  const key = `idem-${sessionId}`;
  const body = { text: "[scenario:api-idem] once" };
  const first = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: body,
    headers: { "idempotency-key": key },
  });
  await api.stage.result({ tenantId: api.tenants.a, sessionId });
  const retry = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: body,
    headers: { "idempotency-key": key },
  });
  expect(first.status).toBe(202);
  expect(retry.status).toBe(202);
  expect(retry.body).toEqual(first.body);
  expect(retry.headers.get("idempotent-replayed")).toBe("true");
  expect(api.stage.llm.journal().filter((entry) => entry.scenario === "api-idem")).toHaveLength(1);
  expect(messagesOf(await api.stage.entries({ tenantId: api.tenants.a, sessionId }))).toHaveLength(2);

  expectProblem(
    await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
      json: { text: "other" },
      headers: { "idempotency-key": key },
    }),
    422,
    "idempotency-key-reused",
  );
  // Keys are per tenant: tenant B's request with the same key is its own.
  const other = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    key: api.keys.b,
    json: body,
    headers: { "idempotency-key": key },
  });
  expect(other.headers.get("idempotent-replayed")).toBeNull();
  expect(other.body.workflowId).toContain(api.tenants.b);

  const imports = await Promise.all(
    [1, 2].map(() =>
      api.call("POST", "/v1/sessions/import", {
        body: fixture("v1-linear.jsonl"),
        headers: { ...ndjson, "idempotency-key": `import-${sessionId}` },
      }),
    ),
  );
  // Concurrent duplicates: one runs, the other is told to retry (409) or replayed.
  const created = imports.filter((response) => response.status === 201);
  expect(created.length).toBeGreaterThanOrEqual(1);
  for (const response of imports) {
    if (response.status !== 201) expectProblem(response, 409, "idempotency-key-in-use");
  }
  const replayed = await api.call("POST", "/v1/sessions/import", {
    body: fixture("v1-linear.jsonl"),
    headers: { ...ndjson, "idempotency-key": `import-${sessionId}` },
  });
  expect(replayed.body.sessionId).toBe(created[0]!.body.sessionId);
  expectProblem(
    await api.call("POST", "/v1/sessions/import", {
      body: "x",
      headers: { ...ndjson, "idempotency-key": "\u00e9" },
    }),
    400,
    "invalid-request",
  );
});

test("problem documents: 401, 404, 400 with errors, malformed JSON, 415, 413", async () => {
  expectProblem(await api.call("GET", "/v1/sessions", { key: null }), 401, "unauthorized");
  const wrong = await api.call("GET", "/v1/sessions", { key: "not-a-key" });
  expectProblem(wrong, 401, "unauthorized");
  expect(wrong.headers.get("www-authenticate")).toContain("Bearer");
  expectProblem(await api.call("GET", "/v1/nothing-here"), 404, "not-found");
  expectProblem(await api.call("GET", `/v1/sessions/${api.sessionId()}`), 404, "session-not-found");

  const invalid = await api.call("POST", `/v1/sessions/${api.sessionId()}/messages`, {
    json: { text: "", delivery: "later" },
  });
  expectProblem(invalid, 400, "invalid-request");
  expect(invalid.body.errors.map((error: { path: string }) => error.path).sort()).toEqual([
    "delivery",
    "text",
  ]);
  expectProblem(
    await api.call("POST", `/v1/sessions/${api.sessionId()}/messages`, {
      json: { text: "x", model: "no-such-model" },
    }),
    400,
    "invalid-request",
  );
  expectProblem(
    await api.call("POST", `/v1/sessions/${api.sessionId()}/messages`, {
      json: { text: "x", workspace: { type: "directory", path: "/etc" } },
    }),
    400,
    "invalid-request",
  );
  expectProblem(
    await api.call("POST", `/v1/sessions/${api.sessionId()}/messages`, {
      json: { text: "x", policy: { rules: [{ tool: "bash", argumentsPattern: "(", action: "ask" }] } },
    }),
    400,
    "invalid-request",
  );
  expectProblem(
    await api.call("POST", `/v1/sessions/${api.sessionId()}/messages`, {
      body: "{",
      headers: { "content-type": "application/json" },
    }),
    400,
    "malformed-body",
  );
  expectProblem(
    await api.call("POST", `/v1/sessions/${api.sessionId()}/messages`, {
      body: "text=x",
      headers: { "content-type": "text/plain" },
    }),
    415,
    "unsupported-media-type",
  );
  expectProblem(await api.call("GET", "/v1/sessions/bad..id"), 400, "invalid-request");
  const tooLarge = await api.call("POST", `/v1/sessions/${api.sessionId()}/messages`, {
    json: { text: "x".repeat(300 * 1024) },
  });
  expectProblem(tooLarge, 413, "payload-too-large");
});

test("GET /v1/openapi.json documents every route; /healthz answers without a key", async () => {
  const doc = await api.call("GET", "/v1/openapi.json", { key: null });
  expect(doc.status).toBe(200);
  expect(Object.keys(doc.body.paths).sort()).toEqual(
    [
      "/v1/integrations/slack/events",
      "/v1/sessions",
      "/v1/sessions/import",
      "/v1/sessions/{sessionId}",
      "/v1/sessions/{sessionId}/abort",
      "/v1/sessions/{sessionId}/approvals/{toolCallId}",
      "/v1/sessions/{sessionId}/branch",
      "/v1/sessions/{sessionId}/compact",
      "/v1/sessions/{sessionId}/entries",
      "/v1/sessions/{sessionId}/events",
      "/v1/sessions/{sessionId}/export",
      "/v1/sessions/{sessionId}/fork",
      "/v1/sessions/{sessionId}/replay",
      "/v1/sessions/{sessionId}/labels",
      "/v1/sessions/{sessionId}/messages",
      "/v1/sessions/{sessionId}/mcp-tools",
      "/v1/sessions/{sessionId}/diff",
      "/v1/sessions/{sessionId}/view",
      "/view/sessions/{sessionId}",
      "/v1/schedules",
      "/v1/evals",
      "/v1/evals/{evalId}",
      "/v1/evals/{evalId}/budget",
      "/v1/evals/{evalId}/cancel",
      "/v1/schedules/{scheduleId}",
      "/v1/schedules/{scheduleId}/pause",
      "/v1/schedules/{scheduleId}/resume",
      "/v1/schedules/{scheduleId}/trigger",
      "/v1/environments",
      "/v1/environments/{name}",
      "/v1/environments/{name}/tokens",
      "/v1/environments/{name}/tokens/{tokenId}",
      "/v1/environments/{name}/calls:claim",
      "/v1/environments/{name}/calls/{callId}/heartbeat",
      "/v1/environments/{name}/calls/{callId}/result",
      "/v1/environments/{name}/sessions/{sessionId}/workspace",
      "/v1/sessions/{sessionId}/budget",
      "/v1/sessions/{sessionId}/resume",
      "/v1/usage",
      "/v1/secrets",
      "/v1/secrets/{name}",
      "/v1/webhooks",
      "/v1/webhooks/{id}",
      "/v1/webhooks/{id}/deliveries",
      "/v1/webhooks/{id}/rotate",
      "/v1/webhooks/{id}/test",
      "/v1/admin/tenants",
      "/v1/admin/tenants/{tenantId}",
      "/v1/admin/tenants/{tenantId}/keys",
      "/v1/admin/tenants/{tenantId}/keys/{keyId}",
      "/v1/admin/tenants/{tenantId}/settings",
      "/v1/admin/tenants/{tenantId}/usage",
    ].sort(),
  );
  expect(
    doc.body.paths["/v1/sessions/{sessionId}/messages"].post.requestBody.content["application/json"].schema,
  ).toBeDefined();
  expect((await api.call("GET", "/healthz", { key: null })).body).toEqual({ ok: true });
});

test("a message sent while a branch summary is being written waits for it, then starts a run", async () => {
  const sessionId = await finishedSession("[scenario:slow-branch] hello");
  const ref = { tenantId: api.tenants.a, sessionId };
  api.stage.llm.addScenario("slow-branch", { turns: [], after: { text: "You said: {{lastUser}}" } });
  api.stage.llm.addFaults([{ kind: "slow", match: { scenario: "slow-branch" }, rate: 1, latencyMs: 1_500 }]);
  const [first] = await api.stage.entries(ref);
  const branching = api.call("POST", `/v1/sessions/${sessionId}/branch`, {
    json: { entryId: first!.id, summarize: true },
  });
  await eventually(async () =>
    (await api.stage.runs.handle(ref).describe()).type === WorkflowType.branchSession ? true : undefined,
  );
  const sent = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: { text: "after the branch" },
  });
  expect(sent.status).toBe(202);
  expect(sent.body.delivery).toBe("started");
  expect((await branching).status).toBe(200);
  await api.stage.result(ref);
  const users = messagesOf(await api.stage.entries(ref)).flatMap((m) =>
    m.role === "user" ? [m.content] : [],
  );
  expect(users.at(-1)).toBe("after the branch");
});
