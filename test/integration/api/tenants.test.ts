/**
 * Tenant administration on the real stack (Temporal, S3, worker, local LLM): the operator's key
 * and tenant keys never open each other's routes, stored keys work and stop working when revoked
 * (an open event stream ends too), a tenant's settings refuse models and one-line hosts and apply
 * their defaults to its runs only, and quotas refuse starts before anything is started.
 */
import { CREDENTIAL_RECHECK_MS } from "../../../src/api/auth";
import { parseModelUrls } from "../../../src/providers/model-urls";
import { KEY_CACHE_SECONDS } from "../../../src/tenants/key-cache";
import { parseGitHosts } from "../../../src/tools/git-source";
import { uniqueName } from "../../support/integration-env";
import { everythingServer, MCP_WORKER_ENV } from "../../support/mcp-servers";
import { eventually } from "../../support/run-harness";
import { readSse } from "../../support/sse";
import { type ApiResponse, type ApiStage, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;

beforeAll(async () => {
  api = await createApiStage({
    workerEnv: MCP_WORKER_ENV,
    config: (stage) => ({
      outbound: {
        modelUrls: parseModelUrls(`${stage.llm.url},http://models.internal.example/v1`),
        providerBaseUrls: {},
        gitHosts: parseGitHosts(undefined),
      },
    }),
  });
});

afterAll(async () => {
  await api?.close();
});

const admin = (method: string, path: string, json?: unknown) =>
  api.call(method, `/v1/admin/tenants${path}`, {
    key: api.adminKey,
    ...(json !== undefined ? { json } : {}),
  });

/** A new tenant with one stored key. */
async function newTenant(): Promise<{ tenantId: string; key: string; keyId: string }> {
  const tenantId = uniqueName("tenant");
  expect((await admin("POST", "", { id: tenantId, name: "Acme" })).status).toBe(201);
  const issued = await admin("POST", `/${tenantId}/keys`, { label: "ci" });
  expect(issued.status).toBe(201);
  return { tenantId, key: issued.body.key, keyId: issued.body.id };
}

/** A scenario whose run calls bash once (a policy that asks for bash keeps it waiting). */
function bashScenario(): string {
  const scenario = uniqueName("bash");
  api.stage.llm.addScenario(scenario, {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo hi" } }] }],
    after: { text: "done" },
  });
  return scenario;
}

const message = (sessionId: string, key: string, json: Record<string, unknown>) =>
  api.call("POST", `/v1/sessions/${sessionId}/messages`, { key, json });

/** The session's status once it is one of `wanted` (or has ended otherwise). */
async function statusOf(sessionId: string, key: string, wanted: string[]): Promise<string> {
  return eventually(async () => {
    const view = await api.call("GET", `/v1/sessions/${sessionId}`, { key });
    const status = view.body?.status as string | undefined;
    return status !== undefined && [...wanted, "failed", "aborted"].includes(status) ? status : undefined;
  });
}

describe("keys", () => {
  test("a tenant key never opens the admin API, and the operator's key opens no tenant route", async () => {
    const { key } = await newTenant();
    for (const tenantKey of [api.keys.a, key]) {
      expectProblem(await api.call("GET", "/v1/admin/tenants", { key: tenantKey }), 401, "unauthorized");
      expectProblem(
        await api.call("POST", "/v1/admin/tenants", { key: tenantKey, json: { id: uniqueName("evil") } }),
        401,
        "unauthorized",
      );
    }
    expectProblem(await api.call("GET", "/v1/admin/tenants", { key: null }), 401, "unauthorized");
    expectProblem(await api.call("GET", "/v1/sessions", { key: api.adminKey }), 401, "unauthorized");
  });

  test("a stored key works for its tenant, is listed without the key, and a repeated tenant is refused", async () => {
    const { tenantId, key, keyId } = await newTenant();
    expect(key).toMatch(/^keel_/);
    const sessions = await api.call("GET", "/v1/sessions", { key });
    expect(sessions.status).toBe(200);
    const listed = await admin("GET", `/${tenantId}/keys`);
    expect(listed.body.keys).toEqual([{ id: keyId, label: "ci", createdAt: expect.any(String) }]);
    expect(listed.text).not.toContain(key);
    expectProblem(await admin("POST", "", { id: tenantId }), 409, "tenant-exists");
    expectProblem(await admin("GET", `/${uniqueName("nobody")}`), 404, "tenant-not-found");
  });

  test(`a key revoked while its holder follows a run: the stream ends and requests are refused within ${KEY_CACHE_SECONDS} s`, async () => {
    const { tenantId, key, keyId } = await newTenant();
    const sessionId = api.sessionId();
    const scenario = bashScenario();
    const started = await message(sessionId, key, {
      text: `[scenario:${scenario}] go`,
      policy: { rules: [{ tool: "bash", action: "ask" }], approvalTimeoutMs: 120_000 },
    });
    expect(started.status).toBe(202);
    await statusOf(sessionId, key, ["waiting_approval"]);
    const response = await api.app.request(`/v1/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" },
    });
    expect(response.status).toBe(200);

    let revokedAt = 0;
    const reading = readSse(response, (events) => {
      if (events.length > 0 && revokedAt === 0) {
        revokedAt = -1;
        void admin("DELETE", `/${tenantId}/keys/${keyId}`).then((revoked) => {
          expect(revoked.body.revokedAt).toEqual(expect.any(String));
          revokedAt = Date.now();
        });
      }
      return false;
    });
    await reading;
    const streamEndedAfter = Date.now() - revokedAt;
    // The run waits for an approval for two minutes: only the revocation ended the stream.
    expect(revokedAt).toBeGreaterThan(0);
    expect(streamEndedAfter).toBeLessThan(KEY_CACHE_SECONDS * 1000 + CREDENTIAL_RECHECK_MS + 1_500);

    const refusedAfter = await eventually(async () => {
      const answer = await api.call("GET", "/v1/sessions", { key });
      return answer.status === 401 ? Date.now() - revokedAt : undefined;
    });
    expect(refusedAfter).toBeLessThan(KEY_CACHE_SECONDS * 1000 + 1_000);
    // Revocation ends access, not the run: the operator's other key of the tenant would still see it.
    const listed = await admin("GET", `/${tenantId}/keys`);
    expect(listed.body.keys[0].revokedAt).toEqual(expect.any(String));
    await api.stage.runs.signalAbort({ tenantId, sessionId }, "test over");
  });
});

describe("settings", () => {
  test("allowed models and one-line hosts refuse what the tenant may not use, naming the setting", async () => {
    const { tenantId, key } = await newTenant();
    const llm = api.stage.llm.url;
    // A host beyond the operator's KEEL_MODEL_URLS cannot be allowed to a tenant.
    const beyond = await admin("PUT", `/${tenantId}/settings`, {
      modelHosts: ["http://elsewhere.example/v1"],
    });
    expectProblem(beyond, 400, "invalid-request");
    expect(beyond.body.detail).toContain("modelHosts");

    const put = await admin("PUT", `/${tenantId}/settings`, {
      models: ["local-chat", "openai-compatible:*"],
      modelHosts: ["http://models.internal.example/v1"],
    });
    expect(put.status).toBe(200);
    expect((await admin("GET", `/${tenantId}/settings`)).body.modelHosts).toEqual([
      "http://models.internal.example/v1",
    ]);

    const catalogRefused = await message(api.sessionId(), key, { text: "hi", model: "local-responses" });
    expectProblem(catalogRefused, 403, "model-not-allowed");
    expect(catalogRefused.body.setting).toBe("models");
    // The operator allows the local LLM's URL; this tenant's hosts do not include it.
    const hostRefused = await message(api.sessionId(), key, {
      text: "hi",
      model: `openai-compatible:m@${llm}`,
    });
    expectProblem(hostRefused, 403, "model-not-allowed");
    expect(hostRefused.body.setting).toBe("modelHosts");
    // A sub-agent's model is checked too.
    const agentRefused = await message(api.sessionId(), key, {
      text: "hi",
      agents: [{ name: "helper", description: "helps", model: "local-responses" }],
    });
    expect(agentRefused.body.setting).toBe("models");

    // Refused before anything started: no run, no session.
    const sessionId = api.sessionId();
    expect((await message(sessionId, key, { text: "hi", model: "local-responses" })).status).toBe(403);
    expectProblem(await api.call("GET", `/v1/sessions/${sessionId}`, { key }), 404, "session-not-found");

    // The allowed model runs; tenant B, whose settings are none, may use what A may not.
    const allowed = api.sessionId();
    expect((await message(allowed, key, { text: "hi", model: "local-chat" })).status).toBe(202);
    expect((await api.stage.result({ tenantId, sessionId: allowed })).status).toBe("completed");
    expect(
      (await message(api.sessionId(), api.keys.b, { text: "hi", model: "local-responses" })).status,
    ).toBe(202);
  });

  test("default run settings apply under the message's own, to the tenant's runs only", async () => {
    // Tenant A of the stage has a static key: the operator gives it settings by creating it.
    expect((await admin("POST", "", { id: api.tenants.a })).status).toBe(201);
    const put = await admin("PUT", `/${api.tenants.a}/settings`, {
      defaults: { policy: { rules: [{ tool: "bash", action: "ask" }], approvalTimeoutMs: 60_000 } },
    });
    expect(put.status).toBe(200);
    const scenario = bashScenario();

    // A's run takes the default policy: the bash call waits for an approval.
    const waiting = api.sessionId();
    expect((await message(waiting, api.keys.a, { text: `[scenario:${scenario}] go` })).status).toBe(202);
    expect(await statusOf(waiting, api.keys.a, ["waiting_approval", "idle"])).toBe("waiting_approval");
    // A message's own policy wins over the default.
    const own = api.sessionId();
    const ownPolicy = { rules: [{ tool: "bash", action: "allow" }] };
    expect(
      (await message(own, api.keys.a, { text: `[scenario:${scenario}] go`, policy: ownPolicy })).status,
    ).toBe(202);
    expect((await api.stage.result({ tenantId: api.tenants.a, sessionId: own })).status).toBe("completed");
    // Tenant B's run of the same scenario is untouched by A's settings.
    const other = api.sessionId();
    expect((await message(other, api.keys.b, { text: `[scenario:${scenario}] go` })).status).toBe(202);
    expect((await api.stage.result({ tenantId: api.tenants.b, sessionId: other })).status).toBe("completed");

    await api.stage.runs.signalAbort({ tenantId: api.tenants.a, sessionId: waiting }, "test over");
    expect((await admin("PUT", `/${api.tenants.a}/settings`, {})).status).toBe(200);
  });
});

test("a tenant's default MCP servers reach its runs: the run lists their tools", async () => {
  const { tenantId, key } = await newTenant();
  const put = await admin("PUT", `/${tenantId}/settings`, { defaults: { mcpServers: [everythingServer()] } });
  expect(put.status).toBe(200);
  const sessionId = api.sessionId();
  expect((await message(sessionId, key, { text: "hi" })).status).toBe(202);
  expect((await api.stage.result({ tenantId, sessionId })).status).toBe("completed");
  const listed = await api.call("GET", `/v1/sessions/${sessionId}/mcp-tools`, { key });
  expect(listed.status).toBe(200);
  const names = JSON.stringify(listed.body);
  expect(names).toContain("everything__echo");
  // Another tenant's run is given none.
  const other = api.sessionId();
  expect((await message(other, api.keys.b, { text: "hi" })).status).toBe(202);
  expect((await api.stage.result({ tenantId: api.tenants.b, sessionId: other })).status).toBe("completed");
  const none = await api.call("GET", `/v1/sessions/${other}/mcp-tools`, { key: api.keys.b });
  expect(JSON.stringify(none.body)).not.toContain("everything__echo");
});

describe("quotas", () => {
  const waitingRun = (scenario: string) => ({
    text: `[scenario:${scenario}] go`,
    policy: { rules: [{ tool: "bash", action: "ask" }], approvalTimeoutMs: 120_000 },
  });

  test("10 simultaneous starts under concurrentRuns 3: exactly 3 start, 7 are refused having started nothing", async () => {
    const { tenantId, key } = await newTenant();
    expect((await admin("PUT", `/${tenantId}/settings`, { quotas: { concurrentRuns: 3 } })).status).toBe(200);
    const scenario = bashScenario();
    const sessions = Array.from({ length: 10 }, () => api.sessionId());
    const answers = await Promise.all(
      sessions.map((sessionId) => message(sessionId, key, waitingRun(scenario))),
    );
    const admitted = sessions.filter((_, i) => answers[i]!.status === 202);
    const refused = answers.filter((answer) => answer.status === 429);
    expect({ admitted: admitted.length, refused: refused.length }).toEqual({ admitted: 3, refused: 7 });
    for (const answer of refused) {
      expectProblem(answer, 429, "quota-exceeded");
      expect(answer.body).toMatchObject({ quota: "concurrentRuns", limit: 3 });
      expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    // Nothing of a refused start exists: no workflow, no session.
    for (const sessionId of sessions.filter((id) => !admitted.includes(id))) {
      expectProblem(await api.call("GET", `/v1/sessions/${sessionId}`, { key }), 404, "session-not-found");
    }
    // A message to a live run is a delivery, not a start: it is not refused.
    await statusOf(admitted[0]!, key, ["waiting_approval"]);
    expect((await message(admitted[0]!, key, { text: "and more", delivery: "followUp" })).status).toBe(202);

    // When a run ends its slot is free again.
    await api.stage.runs.signalAbort({ tenantId, sessionId: admitted[0]! }, "make room");
    await eventually(async () => {
      const view = await api.call("GET", `/v1/sessions/${admitted[0]}`, { key });
      return view.body.run?.status === "aborted" || view.body.status === "aborted" ? true : undefined;
    });
    const next = await eventually(async () => {
      const answer = await message(api.sessionId(), key, waitingRun(scenario));
      return answer.status === 202 ? answer : undefined;
    });
    expect(next.status).toBe(202);
    expectProblem(await message(api.sessionId(), key, waitingRun(scenario)), 429, "quota-exceeded");
    for (const sessionId of [...admitted.slice(1), next.body.sessionId as string])
      await api.stage.runs.signalAbort({ tenantId, sessionId }, "test over");
  });

  test("runsPerMinute: the start past the limit is refused until the next minute", async () => {
    const { tenantId, key } = await newTenant();
    expect((await admin("PUT", `/${tenantId}/settings`, { quotas: { runsPerMinute: 2 } })).status).toBe(200);
    // Not started at a minute's end, so the three starts share one minute.
    const secondOfMinute = new Date().getUTCSeconds();
    if (secondOfMinute > 45)
      await new Promise((resolve) => setTimeout(resolve, (61 - secondOfMinute) * 1000));
    const answers: ApiResponse[] = await Promise.all(
      Array.from({ length: 5 }, () => message(api.sessionId(), key, { text: "hi" })),
    );
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([202, 202, 429, 429, 429]);
    const refused = answers.find((answer) => answer.status === 429)!;
    expect(refused.body).toMatchObject({ quota: "runsPerMinute", limit: 2 });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
  });
});
