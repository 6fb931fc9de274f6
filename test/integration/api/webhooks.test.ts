/**
 * Signed durable webhooks (docs/integrations.md, "Webhooks") on the real stack: the API, a worker
 * process, Temporal and S3, and a receiver that verifies every signature with the Standard
 * Webhooks reference implementation for Python (test/support/webhook_receiver.py). The receiver
 * is reached as hooks.keel.test (resolved to 127.0.0.1 by test/support/resolve-test-hosts.cjs in
 * this process and the worker), the one host the operator allows (KEEL_WEBHOOK_HOSTS). Retries
 * use a test-only short interval (KEEL_WEBHOOK_RETRY_INITIAL_MS=200, at most 1 s apart).
 */
import "../../support/resolve-test-hosts.cjs";
import { randomBytes } from "node:crypto";
import * as dns from "node:dns";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runWorkflowId } from "../../../src/contracts/runs";
import { DEFAULT_WEBHOOK_SETTINGS, HOST_NOT_PUBLIC } from "../../../src/integrations/webhook-sender";
import { SecretStore } from "../../../src/tenants/secrets";
import { WebhookStore } from "../../../src/tenants/webhooks";
import { LocalKeyWrapper } from "../../../src/vault/key-wrapper";
import { s3Client, s3Settings, testTmpDir, uniqueName } from "../../support/integration-env";
import { eventually, expectIntactSession, type WorkerProcess } from "../../support/run-harness";
import { type Received, startWebhookReceiver, type WebhookReceiver } from "../../support/webhook-receiver";
import { type ApiStage, createApiStage } from "./api-stage";

const HOST = "hooks.keel.test";
/** Resolves to a public address in this process (where the API checks it) and to 127.0.0.1 in the worker. */
const REBINDING_HOST = "rebind.keel.test";
/** Resolves to a private (10.x) address in this process. */
const PRIVATE_HOST = "private.keel.test";
const s3 = s3Client();
const key = randomBytes(32);
const vault = new SecretStore(s3, s3Settings(), new LocalKeyWrapper(key));
const webhookEnv = {
  KEEL_WEBHOOK_HOSTS: HOST,
  KEEL_WEBHOOK_RETRY_INITIAL_MS: "200",
  KEEL_WEBHOOK_RETRY_MAX_MS: "1000",
  // A worker killed mid-attempt: the attempt is retried elsewhere after 3 s + 5 s.
  KEEL_WEBHOOK_TIMEOUT_MS: "3000",
  NODE_OPTIONS: `--require ${join(__dirname, "../../support/resolve-test-hosts.cjs")}`,
};
let keyFile: string;
let api: ApiStage;
let worker: WorkerProcess;
let receiver: WebhookReceiver;

const realLookup = dns.promises.lookup;

beforeAll(async () => {
  // DNS rebinding: the API's check sees a public address for this name; the worker connects to 127.0.0.1.
  (dns.promises as { lookup: unknown }).lookup = (hostname: string, options?: unknown) =>
    hostname === REBINDING_HOST
      ? Promise.resolve([{ address: "93.184.216.34", family: 4 }])
      : hostname === PRIVATE_HOST
        ? Promise.resolve([{ address: "10.1.2.3", family: 4 }])
        : (realLookup as (h: string, o?: unknown) => Promise<unknown>)(hostname, options);
  keyFile = join(testTmpDir(), `${uniqueName("vault")}.key`);
  writeFileSync(keyFile, key.toString("base64"), { mode: 0o600 });
  receiver = await startWebhookReceiver();
  api = await createApiStage({
    withWorker: false,
    overrides: { vault, webhooks: new WebhookStore(s3, s3Settings(), vault) },
    config: () => ({
      webhooks: {
        ...DEFAULT_WEBHOOK_SETTINGS,
        hosts: [HOST],
        retryInitialMs: 200,
        retryMaxMs: 1000,
        timeoutMs: 3000,
      },
    }),
  });
  worker = await api.stage.startWorker({ KEEL_VAULT_KEY_FILE: keyFile, ...webhookEnv });
});

afterAll(async () => {
  (dns.promises as { lookup: unknown }).lookup = realLookup;
  await receiver?.stop();
  await api?.close();
  s3.destroy();
});

const url = (label: string) => `http://${HOST}:${receiver.port}/${label}`;

async function addEndpoint(label: string, events: string[], caller = api.call) {
  const response = await caller("POST", "/v1/webhooks", { json: { url: url(label), events } });
  if (response.status !== 201) throw new Error(response.text);
  expect(response.body.secret).toMatch(/^whsec_/);
  return { id: response.body.id as string, secret: response.body.secret as string };
}

/** The first verified, accepted request of each event id at `path`, in arrival order. */
function acceptedAt(path: string): Received[] {
  const seen = new Set<string>();
  return receiver.received.filter((request) => {
    if (request.path !== `/${path}` || request.status !== 200 || seen.has(request.id)) return false;
    seen.add(request.id);
    return true;
  });
}

/** Runs a session whose bash call asks for approval, approves it, and waits for the run's end. */
async function approvedRun() {
  const sessionId = api.sessionId();
  const ref = { tenantId: api.tenants.a, sessionId };
  expect(
    (await api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: api.waitingRunBody() })).status,
  ).toBe(202);
  await api.untilWaitingForApproval(ref);
  const state = await api.stage.runs.state(ref);
  const toolCallId = state?.pendingToolCalls?.[0]?.toolCallId as string;
  const approved = await api.call("POST", `/v1/sessions/${sessionId}/approvals/${toolCallId}`, {
    json: { decision: "approve" },
  });
  expect(approved.status).toBe(202);
  expect((await api.stage.result(ref)).status).toBe("completed");
  await expectIntactSession(api.stage, ref);
  return { ref, toolCallId };
}

test("every event of a run reaches the endpoint once by id, in order, signed as Standard Webhooks verifies; the deliveries say so", async () => {
  const endpoint = await addEndpoint("all", ["*"]);
  await receiver.control({ secrets: [endpoint.secret], status: 200 });
  const { ref, toolCallId } = await approvedRun();
  expect((await api.call("DELETE", `/v1/sessions/${ref.sessionId}`)).status).toBe(200);

  const expected = ["run.started", "approval.required", "run.completed", "session.deleted"];
  const events = await receiver.until(() => {
    const got = acceptedAt("all").filter((request) => request.sessionId === ref.sessionId);
    return got.length >= expected.length ? got : undefined;
  }, "the run's events");
  expect(events.map((event) => event.type)).toEqual(expected);
  expect(events.every((event) => event.verified[0] === true && event.body.id === event.id)).toBe(true);
  const approval = events[1]?.body.data;
  expect(approval).toMatchObject({ sessionId: ref.sessionId, toolCallId, toolName: "bash" });
  expect(events[2]?.body.data.answerExcerpt).toBe("done");
  // Nothing of the tenant's vault or the endpoint's secret in a payload.
  expect(JSON.stringify(events)).not.toContain(endpoint.secret.slice(6));

  const deliveries = await eventually(
    async () => {
      const listed = await api.call("GET", `/v1/webhooks/${endpoint.id}/deliveries`);
      const mine = (listed.body.deliveries as { sessionId: string; status: string }[]).filter(
        (delivery) => delivery.sessionId === ref.sessionId,
      );
      return mine.length === expected.length && mine.every((d) => d.status === "delivered")
        ? mine
        : undefined;
    },
    10_000,
    "the deliveries recorded delivered",
  );
  expect(deliveries[0]).toMatchObject({ attempts: 1, lastResponse: { status: 200, excerpt: "ok" } });
  // No fault, so no retry: every request the receiver got for this session is a distinct event
  // (counted from everything received, not from acceptedAt, which drops repeated ids).
  const requests = receiver.received.filter(
    (request) => request.path === "/all" && request.sessionId === ref.sessionId,
  );
  expect(requests.map((request) => request.type)).toEqual(expected);
  expect(new Set(requests.map((request) => request.id)).size).toBe(expected.length);
  expect((await api.call("DELETE", `/v1/webhooks/${endpoint.id}`)).status).toBe(204);
});

test("a schedule's firing sends schedule.fired before its run's events; an aborted run sends run.aborted; a paused and resumed run run.paused and run.resumed, a failed one run.failed; a tenant without endpoints pays nothing in its run's history", async () => {
  const endpoint = await addEndpoint("lifecycle", [
    "schedule.fired",
    "run.started",
    "run.aborted",
    "run.completed",
    "run.paused",
    "run.resumed",
    "run.failed",
  ]);
  await receiver.control({ secrets: [endpoint.secret], status: 200 });
  const scheduleId = uniqueName("nightly");
  const sessionId = api.sessionId();
  const scenario = uniqueName("hello");
  api.stage.llm.addScenario(scenario, { turns: [{ text: "nightly done" }] });
  const created = await api.call("POST", "/v1/schedules", {
    json: { scheduleId, cron: "0 3 * * *", sessionId, paused: true, text: `[scenario:${scenario}] report` },
  });
  expect(created.status).toBe(201);
  expect((await api.call("POST", `/v1/schedules/${scheduleId}/trigger`)).status).toBe(202);
  const fired = await receiver.until(() => {
    const mine = acceptedAt("lifecycle").filter((request) => request.sessionId === sessionId);
    return mine.length >= 3 ? mine : undefined;
  }, "the firing's events");
  expect(fired.map((request) => request.type)).toEqual(["schedule.fired", "run.started", "run.completed"]);
  expect(fired[0]?.body.data).toEqual({ sessionId, scheduleId });
  expect((await api.call("DELETE", `/v1/schedules/${scheduleId}`)).status).toBe(200);

  const aborted = api.sessionId();
  const abortedRef = { tenantId: api.tenants.a, sessionId: aborted };
  expect(
    (await api.call("POST", `/v1/sessions/${aborted}/messages`, { json: api.waitingRunBody() })).status,
  ).toBe(202);
  await api.untilWaitingForApproval(abortedRef);
  expect(
    (await api.call("POST", `/v1/sessions/${aborted}/abort`, { json: { reason: "not tonight" } })).status,
  ).toBe(202);
  expect((await api.stage.result(abortedRef)).status).toBe("aborted");
  const [, ended] = await receiver.until(() => {
    const mine = acceptedAt("lifecycle").filter((request) => request.sessionId === aborted);
    return mine.length >= 2 ? mine : undefined;
  }, "the aborted run's events");
  expect(ended).toMatchObject({ type: "run.aborted", body: { data: { reason: "not tonight" } } });

  // A run paused at its cost budget, then resumed.
  const paused = api.sessionId();
  const pausedRef = { tenantId: api.tenants.a, sessionId: paused };
  const scenarioP = uniqueName("budget");
  api.stage.llm.addScenario(scenarioP, {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "Done" },
  });
  const startedP = await api.call("POST", `/v1/sessions/${paused}/messages`, {
    json: { text: `[scenario:${scenarioP}] go`, limits: { maxCostUsd: 0.000_001 } },
  });
  expect(startedP.status).toBe(202);
  const pause = await receiver.until(() => {
    const mine = acceptedAt("lifecycle").filter((request) => request.sessionId === paused);
    return mine.some((request) => request.type === "run.paused") ? mine : undefined;
  }, "the pause's event");
  expect(pause.find((request) => request.type === "run.paused")?.body.data).toMatchObject({
    pauseType: "runBudget",
    pausedUntil: expect.any(String),
  });
  expect((await api.call("POST", `/v1/sessions/${paused}/resume`, { json: {} })).status).toBe(202);
  expect((await api.stage.result(pausedRef)).status).toBe("completed");
  const resumed = await receiver.until(() => {
    const mine = acceptedAt("lifecycle").filter((request) => request.sessionId === paused);
    return mine.length >= 4 ? mine : undefined;
  }, "the resumed run's events");
  expect(resumed.map((request) => request.type)).toEqual([
    "run.started",
    "run.paused",
    "run.resumed",
    "run.completed",
  ]);

  // A run whose model call fails for good (the provider refuses the request as invalid).
  const failing = api.sessionId();
  const scenarioF = uniqueName("refused");
  api.stage.llm.addScenario(scenarioF, { turns: [{ text: "never" }] });
  api.stage.llm.addFaults([{ kind: "bad_request", match: { scenario: scenarioF } }]);
  const startedF = await api.call("POST", `/v1/sessions/${failing}/messages`, {
    json: { text: `[scenario:${scenarioF}] go` },
  });
  expect(startedF.status).toBe(202);
  expect((await api.stage.result({ tenantId: api.tenants.a, sessionId: failing })).status).toBe("failed");
  const [, failed] = await receiver.until(() => {
    const mine = acceptedAt("lifecycle").filter((request) => request.sessionId === failing);
    return mine.length >= 2 ? mine : undefined;
  }, "the failed run's events");
  expect(failed?.type).toBe("run.failed");
  expect(failed?.body.data.reason).toEqual(expect.any(String));

  // Tenant B has no endpoint: its run schedules no webhook activity and records no marker.
  const quiet = api.sessionId();
  const scenarioB = uniqueName("hello");
  api.stage.llm.addScenario(scenarioB, { turns: [{ text: "quiet" }] });
  const startedB = await api.call("POST", `/v1/sessions/${quiet}/messages`, {
    key: api.keys.b,
    json: { text: `[scenario:${scenarioB}] hi` },
  });
  expect(startedB.status).toBe(202);
  const refB = { tenantId: api.tenants.b, sessionId: quiet };
  expect((await api.stage.result(refB)).status).toBe("completed");
  const historyOf = async (ref: { tenantId: string; sessionId: string }) =>
    JSON.stringify(await api.stage.client.workflow.getHandle(runWorkflowId(ref)).fetchHistory());
  // The patch marker's id, as the marker's payload holds it in the history (JSON, base64).
  const marker = Buffer.from('{"id":"webhook-events"').toString("base64").slice(0, 28);
  const quietHistory = await historyOf(refB);
  expect(quietHistory).not.toContain("publishWebhookEvent");
  expect(quietHistory).not.toContain(marker);
  const loudHistory = await historyOf(abortedRef);
  expect(loudHistory).toContain("publishWebhookEvent");
  expect(loudHistory).toContain(marker);
  expect((await api.call("DELETE", `/v1/webhooks/${endpoint.id}`)).status).toBe(204);
});

/**
 * How long the receiver stays closed after its refusals: 2 s in `npm test`; the long form sets
 * minutes (`WEBHOOK_TEST_OUTAGE_MS=180000`, docs/integrations.md "Webhooks").
 */
const OUTAGE_MS = Number(process.env.WEBHOOK_TEST_OUTAGE_MS ?? 2_000);

test(
  "a receiver down (503, then closed), then up: every event arrives, none lost, in order per session",
  async () => {
    const endpoint = await addEndpoint("down", ["run.started", "run.completed"]);
    await receiver.control({ secrets: [endpoint.secret], status: 503 });
    const sessions = [api.sessionId(), api.sessionId()];
    for (const sessionId of sessions) {
      const scenario = uniqueName("hello");
      api.stage.llm.addScenario(scenario, { turns: [{ text: `answer of ${sessionId}` }] });
      expect(
        (
          await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
            json: { text: `[scenario:${scenario}] hi` },
          })
        ).status,
      ).toBe(202);
    }
    for (const sessionId of sessions) await api.stage.result({ tenantId: api.tenants.a, sessionId });
    // Refused at least twice each, then the receiver is gone altogether for a while.
    await receiver.until(
      (all) => (all.filter((r) => r.path === "/down" && r.status === 503).length >= 4 ? all : undefined),
      "refused attempts",
    );
    await receiver.stop();
    const pending = await api.call("GET", `/v1/webhooks/${endpoint.id}/deliveries`);
    expect(
      pending.body.deliveries.some(
        (d: { status: string; attempts: number }) => d.status === "pending" && d.attempts >= 1,
      ),
    ).toBe(true);
    await new Promise((done) => setTimeout(done, OUTAGE_MS));
    await receiver.start();
    await receiver.control({ status: 200 });

    for (const sessionId of sessions) {
      const got = await receiver.until(() => {
        const mine = acceptedAt("down").filter((request) => request.sessionId === sessionId);
        return mine.length >= 2 ? mine : undefined;
      }, `both events of ${sessionId}`);
      expect(got.map((request) => request.type)).toEqual(["run.started", "run.completed"]);
      // Order per session on the wire: no completed was ever sent before its started was accepted.
      const wire = receiver.received.filter((r) => r.path === "/down" && r.sessionId === sessionId);
      const firstCompleted = wire.findIndex((r) => r.type === "run.completed");
      const startedAccepted = wire.findIndex((r) => r.type === "run.started" && r.status === 200);
      expect(startedAccepted).toBeGreaterThanOrEqual(0);
      expect(startedAccepted).toBeLessThan(firstCompleted);
    }
    expect((await api.call("DELETE", `/v1/webhooks/${endpoint.id}`)).status).toBe(204);
  },
  60_000 + OUTAGE_MS,
);

test("a worker killed and the API restarted while a delivery is retried: the delivery still arrives", async () => {
  const endpoint = await addEndpoint("restart", ["run.completed"]);
  await receiver.control({ secrets: [endpoint.secret], status: 503 });
  const sessionId = api.sessionId();
  const scenario = uniqueName("hello");
  api.stage.llm.addScenario(scenario, { turns: [{ text: "survives" }] });
  expect(
    (
      await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
        json: { text: `[scenario:${scenario}] hi` },
      })
    ).status,
  ).toBe(202);
  await receiver.until(
    (all) => (all.some((r) => r.path === "/restart" && r.status === 503) ? all : undefined),
    "a refused attempt",
  );
  await worker.kill();
  // A new API (nothing of the delivery lives in an API process) and a new worker.
  const restartedApi = api.callerWith({ webhooks: new WebhookStore(s3, s3Settings(), vault) });
  await receiver.control({ status: 200 });
  worker = await api.stage.startWorker({ KEEL_VAULT_KEY_FILE: keyFile, ...webhookEnv });
  const [arrived] = await receiver.until(() => {
    const mine = acceptedAt("restart").filter((request) => request.sessionId === sessionId);
    return mine.length > 0 ? mine : undefined;
  }, "the delivery after the restart");
  expect(arrived?.body.data.answerExcerpt).toBe("survives");
  const listed = await eventually(
    async () => {
      const response = await restartedApi("GET", `/v1/webhooks/${endpoint.id}/deliveries`);
      const delivery = response.body.deliveries?.[0];
      return delivery?.status === "delivered" ? delivery : undefined;
    },
    10_000,
    "the delivery recorded",
  );
  expect(listed.attempts).toBeGreaterThan(1);
  expect((await api.call("DELETE", `/v1/webhooks/${endpoint.id}`)).status).toBe(204);
});

test("410 Gone disables the endpoint, and its events still queued are recorded failed, not left pending", async () => {
  const endpoint = await addEndpoint("gone", ["*"]);
  // Both events queued behind a receiver that is down; up again, it answers 410.
  await receiver.control({ secrets: [endpoint.secret], status: 410 });
  await receiver.stop();
  for (let i = 0; i < 2; i++)
    expect((await api.call("POST", `/v1/webhooks/${endpoint.id}/test`)).status).toBe(202);
  await receiver.start();
  const deliveries = await eventually(
    async () => {
      const listed = await api.call("GET", `/v1/webhooks/${endpoint.id}/deliveries`);
      const all = listed.body.deliveries as {
        status: string;
        lastResponse?: { status?: number; error?: string };
      }[];
      return all.length === 2 && all.every((delivery) => delivery.status === "failed") ? all : undefined;
    },
    15_000,
    "both deliveries recorded failed",
  );
  expect(
    deliveries.map((delivery) => delivery.lastResponse?.status ?? delivery.lastResponse?.error).sort(),
  ).toEqual([410, "not sent: the endpoint is disabled"].sort());
  expect((await api.call("GET", `/v1/webhooks/${endpoint.id}`)).body.disabledAt).toBeDefined();
  await receiver.control({ status: 200 });
  expect((await api.call("DELETE", `/v1/webhooks/${endpoint.id}`)).status).toBe(204);
});

test("loopback, metadata, private and plain-http endpoints are refused when added; a name rebound to loopback is refused at delivery", async () => {
  for (const refused of [
    "https://127.0.0.1/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/hook",
    `https://${PRIVATE_HOST}/hook`,
    "http://example.com/hook",
  ]) {
    const response = await api.call("POST", "/v1/webhooks", { json: { url: refused, events: ["*"] } });
    expect(response.status).toBe(422);
    expect(response.body.type).toContain("webhook-url-refused");
    // One answer for every internal host: no address, no kind of address, that maps internal DNS.
    expect(JSON.stringify(response.body)).not.toMatch(
      /10\.1\.2\.3|127\.0\.0\.1|169\.254|private address|loopback/,
    );
  }
  const rebound = await api.call("POST", "/v1/webhooks", {
    json: { url: `https://${REBINDING_HOST}:${receiver.port}/rebound`, events: ["*"] },
  });
  expect(rebound.status).toBe(201);
  expect((await api.call("POST", `/v1/webhooks/${rebound.body.id}/test`)).status).toBe(202);
  const [failed] = await eventually(
    async () => {
      const listed = await api.call("GET", `/v1/webhooks/${rebound.body.id}/deliveries`);
      return listed.body.deliveries?.[0]?.status === "failed" ? listed.body.deliveries : undefined;
    },
    15_000,
    "the refused delivery recorded failed",
  );
  // Refused by the egress policy, with the API's one answer: the delivery record names no address.
  expect(failed.lastResponse.error).toBe(`the URL is refused: ${HOST_NOT_PUBLIC}`);
  expect(receiver.received.some((request) => request.path === "/rebound")).toBe(false);
});

test("a rotated secret: during the overlap either secret verifies, after it only the new one", async () => {
  const endpoint = await addEndpoint("rotate", ["*"]);
  const rotated = await api.call("POST", `/v1/webhooks/${endpoint.id}/rotate`, {
    json: { overlapSeconds: 3 },
  });
  expect(rotated.status).toBe(200);
  const fresh = rotated.body.secret as string;
  expect(fresh).not.toBe(endpoint.secret);
  expect(rotated.body.endpoint.previousSecretExpiresAt).toBeDefined();
  await receiver.control({ secrets: [endpoint.secret, fresh], status: 200 });

  const during = await api.call("POST", `/v1/webhooks/${endpoint.id}/test`);
  const [first] = await receiver.until((all) => {
    const hit = all.filter((request) => request.id === during.body.event.id);
    return hit.length > 0 ? hit : undefined;
  }, "the test event during the overlap");
  expect(first?.verified).toEqual([true, true]);

  await new Promise((done) => setTimeout(done, 3_500));
  const after = await api.call("POST", `/v1/webhooks/${endpoint.id}/test`);
  const [second] = await receiver.until((all) => {
    const hit = all.filter((request) => request.id === after.body.event.id);
    return hit.length > 0 ? hit : undefined;
  }, "the test event after the overlap");
  expect(second?.verified).toEqual([false, true]);
});

test("another tenant's endpoint is not there for a tenant: 404 for get, test, rotate, deliveries and delete", async () => {
  const endpoint = await addEndpoint("isolated", ["*"]);
  const asB = { key: api.keys.b };
  for (const [method, path] of [
    ["GET", `/v1/webhooks/${endpoint.id}`],
    ["POST", `/v1/webhooks/${endpoint.id}/test`],
    ["POST", `/v1/webhooks/${endpoint.id}/rotate`],
    ["GET", `/v1/webhooks/${endpoint.id}/deliveries`],
    ["DELETE", `/v1/webhooks/${endpoint.id}`],
  ] as const) {
    const response = await api.call(method, path, asB);
    expect([method, path, response.status]).toEqual([method, path, 404]);
    expect(response.body.type).toContain("webhook-not-found");
  }
  const listed = await api.call("GET", "/v1/webhooks", asB);
  expect(listed.status).toBe(200);
  expect(listed.body.webhooks.map((e: { id: string }) => e.id)).not.toContain(endpoint.id);
  expect((await api.call("GET", `/v1/webhooks/${endpoint.id}`)).status).toBe(200);
  // Without a vault there are no webhooks at all: 503, as for secrets.
  const noVault = api.callerWith({ webhooks: undefined });
  const refused = await noVault("GET", "/v1/webhooks");
  expect(refused.status).toBe(503);
  expect(refused.body.type).toContain("vault-not-configured");
});
