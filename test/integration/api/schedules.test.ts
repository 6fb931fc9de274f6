/**
 * Scheduled runs through the API on the real Temporal dev server and S3: a schedule fires and
 * each firing runs in a new session (or continues a named one), pause and resume, trigger, the
 * overlap policies, unattended approvals, a firing while every worker is down, delete, and one
 * tenant trying to reach another's schedules.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { firingSessionId, type ScheduledRunResult } from "../../../src/workflows/schedules";
import { uniqueName } from "../../support/integration-env";
import { eventually, messagesOf, slowEchoScenario } from "../../support/run-harness";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;

beforeAll(async () => {
  api = await createApiStage();
});

afterAll(async () => {
  await api?.close();
});

/** A scenario of its own per test, so the model calls of one test are counted apart. */
function echoScenario(): string {
  const name = uniqueName("sched");
  api.stage.llm.addScenario(name, { turns: [], after: { text: "You said: {{lastUser}}" } });
  return name;
}

const modelCalls = (scenario: string) =>
  api.stage.llm.journal().filter((entry) => entry.scenario === scenario).length;

async function create(body: Record<string, unknown>, key?: string) {
  const response = await api.call("POST", "/v1/schedules", { json: body, ...(key ? { key } : {}) });
  expect(response.status).toBe(201);
  return response.body;
}

const get = (id: string, key?: string) => api.call("GET", `/v1/schedules/${id}`, key ? { key } : {});
const post = (id: string, action: string, key?: string) =>
  api.call("POST", `/v1/schedules/${id}/${action}`, key ? { key } : {});

/** A firing: its `scheduledRun` workflow (firings within one second share the workflow id). */
interface Firing {
  workflowId: string;
  runId: string;
}

/** The result of a firing's `scheduledRun` workflow, pinned to that firing. */
const firingResult = (firing: Firing) =>
  api.stage.client.workflow
    .getHandle(firing.workflowId, firing.runId, { followRuns: false })
    .result() as Promise<ScheduledRunResult>;

/** Why a firing failed: its start activity's failure (a refusal's type and message). */
async function startFailure(firing: Firing): Promise<{ message?: string; type?: string } | undefined> {
  const failure = await firingResult(firing).then(
    () => undefined,
    (error: unknown) => error,
  );
  return (failure as { cause?: { cause?: { message?: string; type?: string } } } | undefined)?.cause?.cause;
}

/** The schedule's firings (recent runs) once there are at least `count`. */
async function firings(id: string, count: number, timeoutMs = 30_000, key?: string) {
  return eventually(
    async () => {
      const view = (await get(id, key)).body;
      return view.recentRuns.length >= count ? (view.recentRuns as Firing[]) : undefined;
    },
    timeoutMs,
    `${count} firing(s) of ${id}`,
  );
}

/** Waits until the schedule has `count` firings whose run is still going. */
async function running(id: string, count: number) {
  await eventually(
    async () => ((await get(id)).body.runningRuns.length === count ? true : undefined),
    30_000,
    `${count} running firing(s) of ${id}`,
  );
}

test("a schedule fires on its interval, each firing a run in a new session; pause stops it, resume goes on, delete ends it", async () => {
  const scenario = echoScenario();
  const id = uniqueName("tick");
  const created = await create({
    scheduleId: id,
    every: "2s",
    text: `[scenario:${scenario}] hello from a schedule`,
  });
  expect(created).toMatchObject({
    scheduleId: id,
    temporalScheduleId: `keel-schedule/${api.tenants.a}/${id}`,
    every: "2s",
    overlap: "skip",
    onApproval: "deny",
    paused: false,
    model: "local-chat",
  });
  // A Temporal Schedule (the Temporal UI's Schedules page lists it) whose firings are scheduledRun.
  const described = await api.stage.client.schedule.getHandle(created.temporalScheduleId).describe();
  expect(described.action.workflowType).toBe("scheduledRun");

  const [first] = await firings(id, 1);
  const result = await firingResult(first!);
  expect(result).toMatchObject({
    status: "completed",
    sessionId: expect.stringMatching(new RegExp(`^${id}-\\d{8}T\\d{6}Z-[0-9a-f]{8}$`)),
  });
  const entries = await api.stage.entries({ tenantId: api.tenants.a, sessionId: result.sessionId });
  expect(messagesOf(entries).map((message) => message.role)).toEqual(["user", "assistant"]);
  const session = await api.call("GET", `/v1/sessions/${result.sessionId}`);
  expect(session.status).toBe(200);

  const paused = await api.call("POST", `/v1/schedules/${id}/pause`, { json: { note: "quiet hours" } });
  expect(paused.status).toBe(200);
  expect(paused.body).toMatchObject({ paused: true, note: "quiet hours" });
  // A firing already started when the pause arrived still runs: count from a quiet moment.
  await sleep(3_000);
  const whilePaused = modelCalls(scenario);
  await sleep(5_000);
  expect(modelCalls(scenario)).toBe(whilePaused);

  expect((await post(id, "resume")).body).toMatchObject({ paused: false });
  await eventually(
    async () => (modelCalls(scenario) > whilePaused ? true : undefined),
    20_000,
    "a firing after resume",
  );

  const deleted = await api.call("DELETE", `/v1/schedules/${id}`);
  expect(deleted.status).toBe(200);
  expectProblem(await get(id), 404, "schedule-not-found");
  await sleep(3_000);
  const afterDelete = modelCalls(scenario);
  await sleep(5_000);
  expect(modelCalls(scenario)).toBe(afterDelete);
});

test("list and trigger: a paused schedule fires when triggered; with a session every firing continues it", async () => {
  const scenario = echoScenario();
  const id = uniqueName("daily");
  const sessionId = api.sessionId();
  await create({
    scheduleId: id,
    cron: "0 3 * * *",
    timezone: "Europe/Berlin",
    sessionId,
    paused: true,
    text: `[scenario:${scenario}] daily report`,
  });
  const listed = await eventually(async () => {
    const { body } = await api.call("GET", "/v1/schedules");
    return body.schedules.find((schedule: { scheduleId: string }) => schedule.scheduleId === id);
  });
  expect(listed).toMatchObject({ cron: "0 3 * * *", timezone: "Europe/Berlin", sessionId, paused: true });
  // Temporal knows when it would fire; paused, it fires at none of those times.
  expect(listed.nextRuns).toEqual([]);

  expect((await post(id, "trigger")).status).toBe(202);
  const [first] = await firings(id, 1);
  expect(await firingResult(first!)).toMatchObject({ sessionId, status: "completed" });
  expect((await post(id, "trigger")).status).toBe(202);
  const recent = await firings(id, 2);
  expect(await firingResult(recent[1]!)).toMatchObject({ sessionId, status: "completed" });
  const roles = messagesOf(await api.stage.entries({ tenantId: api.tenants.a, sessionId })).map(
    (m) => m.role,
  );
  expect(roles).toEqual(["user", "assistant", "user", "assistant"]);
  await api.call("DELETE", `/v1/schedules/${id}`);
});

/** A paused schedule whose runs take ~6 s each (one slow model call). */
async function slowSchedule(overlap: string) {
  const scenario = uniqueName("slow");
  slowEchoScenario(api.stage, scenario, 6_000);
  const id = uniqueName(overlap);
  await create({
    scheduleId: id,
    every: "1d",
    paused: true,
    overlap,
    text: `[scenario:${scenario}] slow work`,
  });
  return { id, scenario };
}

test("overlap skip: a firing while the previous run goes is skipped", async () => {
  const { id, scenario } = await slowSchedule("skip");
  await post(id, "trigger");
  await running(id, 1);
  await post(id, "trigger");
  const [first] = await firings(id, 1);
  await firingResult(first!);
  await sleep(2_000);
  expect((await get(id)).body.recentRuns).toHaveLength(1);
  expect(modelCalls(scenario)).toBe(1);
  await api.call("DELETE", `/v1/schedules/${id}`);
});

test("overlap buffer-one: one firing waits for the running one, a third is dropped", async () => {
  const { id, scenario } = await slowSchedule("buffer-one");
  await post(id, "trigger");
  await running(id, 1);
  await post(id, "trigger");
  await post(id, "trigger");
  const done = await firings(id, 2, 60_000);
  const results = await Promise.all(done.map((firing) => firingResult(firing!)));
  expect(results.map((result) => result.status)).toEqual(["completed", "completed"]);
  await sleep(2_000);
  expect((await get(id)).body.recentRuns).toHaveLength(2);
  expect(modelCalls(scenario)).toBe(2);
  await api.call("DELETE", `/v1/schedules/${id}`);
});

test("overlap cancel-previous: the running firing's run is aborted, then the new one runs", async () => {
  const { id } = await slowSchedule("cancel-previous");
  await post(id, "trigger");
  await running(id, 1);
  const [first] = await firings(id, 1);
  await post(id, "trigger");
  const done = await firings(id, 2, 60_000);
  await expect(firingResult(first!)).rejects.toThrow();
  const second = await firingResult(done[1]!);
  expect(second.status).toBe("completed");
  // The first firing's run ended as aborted, its session closed like any abort.
  const firstSessionId = firingSessionId({ tenantId: api.tenants.a, scheduleId: id }, first!);
  const aborted = await api.stage.result({ tenantId: api.tenants.a, sessionId: firstSessionId! });
  expect(aborted.status).toBe("aborted");
  await api.call("DELETE", `/v1/schedules/${id}`);
});

test("approvals nobody is there to give: deny refuses the call at once instead of waiting", async () => {
  const scenario = uniqueName("ask");
  api.stage.llm.addScenario(scenario, {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo scheduled" } }] }],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const id = uniqueName("asks");
  await create({
    scheduleId: id,
    every: "1d",
    paused: true,
    text: `[scenario:${scenario}] run it`,
    policy: { rules: [{ tool: "bash", action: "ask" }], approvalTimeoutMs: 600_000 },
  });
  await post(id, "trigger");
  const [first] = await firings(id, 1);
  const result = await firingResult(first!);
  expect(result.status).toBe("completed");
  const messages = messagesOf(
    await api.stage.entries({ tenantId: api.tenants.a, sessionId: result.sessionId }),
  );
  const toolResult = messages.find((message) => message.role === "toolResult");
  expect(toolResult).toMatchObject({ isError: true });
  expect(JSON.stringify(toolResult)).toContain("denied by policy");
  await api.call("DELETE", `/v1/schedules/${id}`);
});

// Longer than the default: a worker start takes tens of seconds on a loaded machine.
test("a firing while every worker is down starts its run when a worker returns", async () => {
  const scenario = echoScenario();
  const id = uniqueName("down");
  await create({
    scheduleId: id,
    every: "1d",
    paused: true,
    text: `[scenario:${scenario}] after the outage`,
  });
  await api.stage.stopWorkers();
  try {
    expect((await post(id, "trigger")).status).toBe(202);
    const [first] = await firings(id, 1);
    await sleep(3_000);
    const firing = await api.stage.client.workflow.getHandle(first!.workflowId).describe();
    expect(firing.status.name).toBe("RUNNING");
    expect(modelCalls(scenario)).toBe(0);
  } finally {
    await api.stage.startWorker();
  }
  const [first] = await firings(id, 1);
  expect(await firingResult(first!)).toMatchObject({ status: "completed" });
  expect(modelCalls(scenario)).toBe(1);
  await api.call("DELETE", `/v1/schedules/${id}`);
}, 150_000);

test("tenant isolation: another tenant can neither see nor touch a schedule, and its schedules run in its own sessions", async () => {
  const scenario = echoScenario();
  const id = uniqueName("mine");
  const sessionId = api.sessionId();
  await create({
    scheduleId: id,
    every: "1d",
    paused: true,
    sessionId,
    text: `[scenario:${scenario}] tenant a`,
  });
  const other = api.keys.b;
  expectProblem(await get(id, other), 404, "schedule-not-found");
  for (const action of ["pause", "resume", "trigger"])
    expectProblem(await post(id, action, other), 404, "schedule-not-found");
  expectProblem(await api.call("DELETE", `/v1/schedules/${id}`, { key: other }), 404, "schedule-not-found");
  const listed = await api.call("GET", "/v1/schedules", { key: other });
  expect(listed.body.schedules.map((schedule: { scheduleId: string }) => schedule.scheduleId)).not.toContain(
    id,
  );
  // An id naming another tenant's Temporal schedule is not an id.
  const crafted = await api.call(
    "GET",
    `/v1/schedules/${encodeURIComponent(`keel-schedule/${api.tenants.a}/${id}`)}`,
    { key: other },
  );
  expect([400, 404]).toContain(crafted.status);
  // Tenant A's schedule is untouched: still there, paused, never fired.
  expect((await get(id)).body).toMatchObject({ paused: true, recentRuns: [] });

  // Tenant B's schedule with the same id and A's session id: its own schedule, its own session.
  await create(
    { scheduleId: id, every: "1d", paused: true, sessionId, text: `[scenario:${scenario}] tenant b` },
    other,
  );
  await post(id, "trigger", other);
  const [first] = await eventually(async () => {
    const view = (await get(id, other)).body;
    return view.recentRuns.length > 0 ? view.recentRuns : undefined;
  });
  expect(await firingResult(first!)).toMatchObject({ sessionId, status: "completed" });
  const bSession = messagesOf(await api.stage.entries({ tenantId: api.tenants.b, sessionId }));
  expect(JSON.stringify(bSession)).toContain("tenant b");
  expectProblem(await api.call("GET", `/v1/sessions/${sessionId}`), 404, "session-not-found");
  expect((await get(id)).body).toMatchObject({ recentRuns: [] });
  await api.call("DELETE", `/v1/schedules/${id}`);
  await api.call("DELETE", `/v1/schedules/${id}`, { key: other });
});

test("a create retried with its Idempotency-Key is answered with the first answer, not refused or made twice", async () => {
  const id = uniqueName("retry");
  const request = {
    json: { scheduleId: id, every: "1d", paused: true, text: "once" },
    headers: { "idempotency-key": uniqueName("key") },
  };
  const first = await api.call("POST", "/v1/schedules", request);
  expect(first.status).toBe(201);
  const retry = await api.call("POST", "/v1/schedules", request);
  expect(retry.status).toBe(201);
  expect(retry.headers.get("idempotent-replayed")).toBe("true");
  expect(retry.body.temporalScheduleId).toBe(first.body.temporalScheduleId);
  // Without the key, the same body is a second create of a taken id.
  expectProblem(await api.call("POST", "/v1/schedules", { json: request.json }), 409, "schedule-exists");
  await api.call("DELETE", `/v1/schedules/${id}`);
});

test("refused: a malformed body or a duration under its minimum (400), cron and every not one of them or what Temporal cannot read (422), an id taken (409)", async () => {
  const base = { text: "x" };
  for (const body of [
    { ...base, every: "soon" },
    { ...base, every: "1h", overlap: "allow-all" },
    { ...base, every: "1h", scheduleId: "a/b" },
    { ...base, cron: "every night at three" },
    // The duration patterns state the minimums (1 s, 10 s).
    { ...base, every: "500ms" },
    { ...base, every: "1h", catchupWindow: "1s" },
  ]) {
    expectProblem(await api.call("POST", "/v1/schedules", { json: body }), 400, "invalid-request");
  }
  for (const body of [
    { ...base, cron: "* * * * *", every: "1m" },
    base,
    { ...base, every: "1m", timezone: "UTC" },
    { ...base, cron: "99 3 * * *" },
    { ...base, cron: "0 3 * * *", timezone: "Mars/Olympus_Mons" },
  ]) {
    expectProblem(await api.call("POST", "/v1/schedules", { json: body }), 422, "invalid-schedule");
  }
  const id = uniqueName("taken");
  await create({ ...base, scheduleId: id, every: "1d", paused: true });
  expectProblem(
    await api.call("POST", "/v1/schedules", { json: { ...base, scheduleId: id, every: "1d" } }),
    409,
    "schedule-exists",
  );
  await api.call("DELETE", `/v1/schedules/${id}`);
});

test("a firing over its tenant's quota starts no run and fails saying which quota; under it, firings run again", async () => {
  const scenario = echoScenario();
  const id = uniqueName("quota");
  const settings = `/v1/admin/tenants/${api.tenants.b}/settings`;
  // Tenant B's key is the operator's static one; its settings live in the tenant store.
  const made = await api.call("POST", "/v1/admin/tenants", {
    key: api.adminKey,
    json: { id: api.tenants.b },
  });
  expect([201, 409]).toContain(made.status);
  expect(
    (await api.call("PUT", settings, { key: api.adminKey, json: { quotas: { concurrentRuns: 0 } } })).status,
  ).toBe(200);
  try {
    await create(
      { scheduleId: id, every: "1d", paused: true, text: `[scenario:${scenario}] report` },
      api.keys.b,
    );
    expect((await post(id, "trigger", api.keys.b)).status).toBe(202);
    const [first] = await firings(id, 1, 30_000, api.keys.b);
    // The activity's failure names the quota; nothing was started.
    const cause = await startFailure(first!);
    expect(cause).toMatchObject({ type: "QuotaExceeded" });
    expect(cause?.message).toMatch(
      /^the firing started no run: The tenant's quota concurrentRuns \(0\) is reached/,
    );
    expect(modelCalls(scenario)).toBe(0);

    expect((await api.call("PUT", settings, { key: api.adminKey, json: {} })).status).toBe(200);
    expect((await post(id, "trigger", api.keys.b)).status).toBe(202);
    const recent = await firings(id, 2, 30_000, api.keys.b);
    expect(await firingResult(recent[1]!)).toMatchObject({ status: "completed" });
    expect(modelCalls(scenario)).toBe(1);
  } finally {
    await api.call("PUT", settings, { key: api.adminKey, json: {} });
    await api.call("DELETE", `/v1/schedules/${id}`, { key: api.keys.b });
  }
});

test("a firing takes the API's start path: at the concurrent-run quota it is refused as the API's message is and takes no slot; started, it holds the slot and is counted as an API start", async () => {
  const { tenantId, key } = await api.storedTenant();
  const settings = `/v1/admin/tenants/${tenantId}/settings`;
  expect(
    (await api.call("PUT", settings, { key: api.adminKey, json: { quotas: { concurrentRuns: 1 } } })).status,
  ).toBe(200);
  const message = (sessionId: string, json: Record<string, unknown>) =>
    api.call("POST", `/v1/sessions/${sessionId}/messages`, { key, json });

  // An API start holds the one slot; the API refuses the next start.
  const held = api.sessionId();
  expect((await message(held, api.waitingRunBody())).status).toBe(202);
  await api.untilWaitingForApproval({ tenantId, sessionId: held });
  expectProblem(await message(api.sessionId(), { text: "hi" }), 429, "quota-exceeded");
  expect(await api.slotHolders(tenantId, 1)).toEqual([held]);
  expect(await api.runsCounted(key)).toBe(1);

  // A firing now is refused for the same quota, and its refusal takes nothing: the slot is the API run's.
  const id = uniqueName("slots");
  const fired = api.sessionId();
  const { text, policy } = api.waitingRunBody();
  await create(
    { scheduleId: id, every: "1d", paused: true, sessionId: fired, onApproval: "wait", text, policy },
    key,
  );
  try {
    expect((await post(id, "trigger", key)).status).toBe(202);
    const [refused] = await firings(id, 1, 30_000, key);
    const cause = await startFailure(refused!);
    expect(cause).toMatchObject({ type: "QuotaExceeded" });
    expect(cause?.message).toMatch(
      /^the firing started no run: The tenant's quota concurrentRuns \(1\) is reached/,
    );
    expect(await api.slotHolders(tenantId, 1)).toEqual([held]);
    expect(await api.runsCounted(key)).toBe(1);
    expect(await api.stage.runs.state({ tenantId, sessionId: fired })).toBeUndefined();

    // Once the API's run has ended, a firing starts: its run holds the slot, so now the API is refused.
    await api.stage.runs.signalAbort({ tenantId, sessionId: held }, "make room");
    expect((await api.stage.result({ tenantId, sessionId: held })).status).toBe("aborted");
    expect((await post(id, "trigger", key)).status).toBe(202);
    const started = (await firings(id, 2, 30_000, key))[1]!;
    await api.untilWaitingForApproval({ tenantId, sessionId: fired });
    expect(await api.slotHolders(tenantId, 1)).toEqual([fired]);
    expect(await api.runsCounted(key)).toBe(2);
    const refusedByApi = await message(api.sessionId(), { text: "hi" });
    expectProblem(refusedByApi, 429, "quota-exceeded");
    expect(refusedByApi.body).toMatchObject({ quota: "concurrentRuns", limit: 1 });
    // The firing follows its run to the end (its wait would otherwise hold the worker's shutdown).
    await api.stage.runs.signalAbort({ tenantId, sessionId: fired }, "test over");
    expect(await firingResult(started)).toMatchObject({ sessionId: fired, status: "aborted" });
  } finally {
    await api.stage.runs.signalAbort({ tenantId, sessionId: fired }, "test over");
    await api.call("DELETE", `/v1/schedules/${id}`, { key });
  }
});
