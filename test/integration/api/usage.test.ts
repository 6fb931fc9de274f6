/**
 * Usage per tenant per day on the real stack: every model call the provider served is counted
 * once, including one whose worker died after recording it and before storing its answer (the
 * retry pays a second call, and both count); runs and tool time are counted, the tenant and the
 * operator read the same totals, and a token quota refuses the next start with 429 once the day's
 * usage reaches it.
 */
import { dayOf } from "../../../src/tenants/usage";
import { messagesOf } from "../../support/run-harness";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;

beforeAll(async () => {
  api = await createApiStage({ withWorker: false });
});

afterAll(async () => {
  await api?.stage.stopWorkers();
  await api?.close();
});

test("every call the provider served is counted once, a worker's death between recording and storing included", async () => {
  api.stage.llm.addScenario("usage-crash", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "listed" },
  });
  const first = await api.stage.startWorker({ KEEL_FAILPOINTS: "llmTurn.afterUsage" });
  const sessionId = api.sessionId();
  const sent = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: { text: "[scenario:usage-crash] list", policy: { rules: [], default: "allow" } },
  });
  expect(sent.status).toBe(202);
  await first.exited();
  const second = await api.stage.startWorker();
  const result = await api.stage.result({ tenantId: api.tenants.a, sessionId });
  expect(result.status).toBe("completed");

  const today = dayOf(Date.now());
  const usage = await api.call("GET", `/v1/usage?from=${today}&to=${today}`);
  expect(usage.status).toBe(200);
  const [day] = usage.body.days;
  // Two model turns (the tool call, then the answer); the first one's call was made twice: the
  // worker died after recording it, before storing its answer, and the retry called again.
  const served = api.stage.llm
    .journal()
    .filter((call) => call.scenario === "usage-crash" && call.outcome === "completed");
  expect(served).toHaveLength(3);
  const [firstAnswer] = messagesOf(await api.stage.entries({ tenantId: api.tenants.a, sessionId })).filter(
    (message) => message.role === "assistant",
  );
  const lostCallTokens = firstAnswer?.role === "assistant" ? firstAnswer.usage.totalTokens : 0;
  expect(lostCallTokens).toBeGreaterThan(0);
  expect(day).toMatchObject({
    day: today,
    runs: 1,
    turns: served.length,
    tokens: result.usage.totalTokens + lostCallTokens,
  });
  expect(day.toolSeconds).toBeGreaterThan(0);
  const asOperator = await api.call(
    "GET",
    `/v1/admin/tenants/${api.tenants.a}/usage?from=${today}&to=${today}`,
    {
      key: api.adminKey,
    },
  );
  expect(asOperator.body).toEqual(usage.body);
  // Another tenant's usage is its own.
  const other = await api.call("GET", `/v1/usage?from=${today}&to=${today}`, { key: api.keys.b });
  expect(other.body.days[0]).toMatchObject({ runs: 0, turns: 0, tokens: 0 });
  expectProblem(await api.call("GET", "/v1/usage?from=2020-01-01&to=2026-01-01"), 422, "invalid-range");

  // With the day's tokens at the quota, the next start is refused before anything starts.
  expect(
    (await api.call("POST", "/v1/admin/tenants", { key: api.adminKey, json: { id: api.tenants.a } })).status,
  ).toBe(201);
  const quota = { quotas: { tokensPerDay: result.usage.totalTokens } };
  const put = await api.call("PUT", `/v1/admin/tenants/${api.tenants.a}/settings`, {
    key: api.adminKey,
    json: quota,
  });
  expect(put.status).toBe(200);
  const refusedSession = api.sessionId();
  const refused = await api.call("POST", `/v1/sessions/${refusedSession}/messages`, {
    json: { text: "more" },
  });
  expectProblem(refused, 429, "quota-exceeded");
  expect(refused.body).toMatchObject({ quota: "tokensPerDay", limit: result.usage.totalTokens });
  const retryAfter = Number(refused.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(86_400);
  expectProblem(await api.call("GET", `/v1/sessions/${refusedSession}`), 404, "session-not-found");
  await second.stop();
});
