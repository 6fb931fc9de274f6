/**
 * The API while no worker is running: abort answers from Temporal's own description and, when no
 * worker answers its update within seconds, the signal; never from a query that needs a worker. (Idempotency records under S3 faults are in
 * faults.test.ts; a Temporal restart under concurrent requests in temporal-restart.test.ts.)
 */
import { modelCalled } from "../../support/run-harness";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;

beforeAll(async () => {
  api = await createApiStage({ withWorker: false });
});

afterAll(async () => {
  await api?.close();
});

const refOf = (sessionId: string) => ({ tenantId: api.tenants.a, sessionId });

describe("no worker", () => {
  test("an abort right after the worker was killed is answered 202 at once, and the run ends aborted", async () => {
    const worker = await api.stage.startWorker();
    api.stage.llm.addScenario("outage-hung", { turns: [], after: { text: "never" } });
    api.stage.llm.addFaults([{ kind: "hang", match: { scenario: "outage-hung" } }]);
    const sessionId = api.sessionId();
    const started = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
      json: { text: "[scenario:outage-hung] think" },
    });
    expect(started.status).toBe(202);
    await modelCalled(api.stage, "outage-hung");
    await worker.kill();

    const began = Date.now();
    const aborted = await api.call("POST", `/v1/sessions/${sessionId}/abort`, {
      json: { reason: "worker gone" },
      headers: { "idempotency-key": "abort-no-worker" },
    });
    expect(aborted.status).toBe(202);
    // No worker answers the abort update: after its short wait the abort is recorded as a signal.
    expect(aborted.body).toEqual({ accepted: true, runId: expect.any(String), answered: false });
    // A state query would wait for a worker until it times out (tens of seconds).
    expect(Date.now() - began).toBeLessThan(5_000);

    // The signal was recorded: the next worker finishes the run as aborted.
    await api.stage.startWorker();
    expect((await api.stage.result(refOf(sessionId))).status).toBe("aborted");
    expectProblem(await api.call("POST", `/v1/sessions/${sessionId}/abort`), 409, "no-active-run");
    expectProblem(await api.call("POST", `/v1/sessions/${api.sessionId()}/abort`), 404, "session-not-found");
    await api.stage.stopWorkers();
  }, 90_000);

  test("a completed run is read from its result when no worker can answer its state query", async () => {
    await api.stage.startWorker();
    const sessionId = api.sessionId();
    const started = await api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: { text: "hello" } });
    expect(started.status).toBe(202);
    expect((await api.stage.result(refOf(sessionId))).status).toBe("completed");
    await api.stage.stopWorkers();

    // A closed execution answers queries only through a worker replaying it: with none, the
    // session is still read, its run from the result in its history.
    const session = await api.call("GET", `/v1/sessions/${sessionId}`);
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({
      status: "idle",
      run: { status: "completed", turn: 1, endReason: "the agent finished", pendingToolCalls: [] },
    });
    const exported = await api.call("GET", `/v1/sessions/${sessionId}/export`);
    expect(exported.status).toBe(200);
  }, 120_000);
});
