/**
 * The API when its dependencies fail: idempotent messages delivered at most once whatever fails
 * after the delivery, runs whose workflow failed or was terminated reported as such (and the CLI's
 * `--follow` ending with them), and S3 or Temporal being down answered with 503 + Retry-After.
 */

import { createHash } from "node:crypto";
import type { Server } from "node:http";
import { Client, type WorkflowClientInterceptor } from "@temporalio/client";
import type { z } from "zod";
import {
  DEDUPLICATED_CLAIM_LEASE_MS,
  idempotencyRecordKey,
  REPLAYED_HEADER,
  STALE_CLAIM_MS,
} from "../../../src/api/idempotency";
import { startApiServer } from "../../../src/api/server";
import { LazyRunClient } from "../../../src/api/temporal";
import { freePorts } from "../../../src/cli/devstack/ports";
import { runWorkflowId } from "../../../src/contracts/runs";
import { createSessionHeader } from "../../../src/core/session-entries";
import { RunClient } from "../../../src/run-client/run-client";
import { JsonObjects } from "../../../src/store/json-objects";
import { keelDataConverter } from "../../../src/store/payload-storage";
import { createS3Client } from "../../../src/store/s3-config";
import { SessionStore } from "../../../src/store/session-store";
import { s3Client, s3Settings, temporalNamespace } from "../../support/integration-env";
import { expectIntactSession, messagesOf, modelCalled, slowEchoScenario } from "../../support/run-harness";
import { type S3FaultProxy, startS3FaultProxy } from "../../support/s3-fault-proxy";
import { runKeel } from "../cli/keel-process";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;
const s3 = s3Client();
const proxies: S3FaultProxy[] = [];

beforeAll(async () => {
  api = await createApiStage();
});

afterAll(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()));
  await api?.close();
  s3.destroy();
});

const refOf = (sessionId: string) => ({ tenantId: api.tenants.a, sessionId });
const messagePath = (sessionId: string) => `/v1/sessions/${sessionId}/messages`;

/** What a Temporal frontend restart looks like to a client: gRPC UNAVAILABLE. */
const temporalRestarted = () => Object.assign(new Error("14 UNAVAILABLE: Connection dropped"), { code: 14 });

/** A run client on the stage's Temporal whose calls pass through `interceptor` (fault injection). */
function runsThrough(interceptor: WorkflowClientInterceptor): RunClient {
  const client = new Client({
    connection: api.stage.client.connection,
    namespace: temporalNamespace(),
    dataConverter: keelDataConverter(s3, s3Settings()),
    interceptors: { workflow: [interceptor] },
  });
  return new RunClient(client, api.stage.taskQueue);
}

async function userTexts(sessionId: string): Promise<string[]> {
  return messagesOf(await api.stage.entries(refOf(sessionId))).flatMap((message) =>
    message.role === "user" && typeof message.content === "string" ? [message.content] : [],
  );
}

/** Posts a message and expects 202; the answer's body. */
async function call200(request: { json: object; headers?: Record<string, string> }, sessionId: string) {
  const answer = await api.call("POST", messagePath(sessionId), request);
  expect(answer.status).toBe(202);
  return answer.body;
}

async function s3FaultProxy(): Promise<{ proxy: S3FaultProxy; settings: ReturnType<typeof s3Settings> }> {
  const settings = s3Settings();
  const proxy = await startS3FaultProxy(settings.endpoint!, 0);
  proxies.push(proxy);
  return { proxy, settings: { ...settings, endpoint: proxy.endpoint } };
}

describe("Idempotency-Key: a message is delivered at most once", () => {
  test("a failure after update-with-start (describe) does not turn a delivered message into a 5xx", async () => {
    slowEchoScenario(api.stage, "idem-describe", 1_500);
    const runs = runsThrough({
      describe: async () => {
        throw temporalRestarted();
      },
    });
    const call = api.callerWith({ runs: async () => runs });
    const sessionId = api.sessionId();
    const request = {
      json: { text: "[scenario:idem-describe] once" },
      headers: { "idempotency-key": "describe-fails" },
    };
    const first = await call("POST", messagePath(sessionId), request);
    expect(first.status).toBe(202);
    const retry = await api.call("POST", messagePath(sessionId), request);
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual(first.body);
    await api.stage.result(refOf(sessionId));
    expect(await userTexts(sessionId)).toEqual(["[scenario:idem-describe] once"]);
  });

  test("an answer lost after the delivery: the retry lands on the same Temporal update, live or closed", async () => {
    slowEchoScenario(api.stage, "idem-lost", 1_500);
    let lost = false;
    const runs = runsThrough({
      startUpdateWithStart: async (input, next) => {
        const output = await next(input);
        if (!lost) {
          lost = true;
          throw temporalRestarted();
        }
        return output;
      },
    });
    const call = api.callerWith({ runs: async () => runs });
    const sessionId = api.sessionId();
    const request = {
      json: { text: "[scenario:idem-lost] once" },
      headers: { "idempotency-key": "answer-lost" },
    };
    const first = await call("POST", messagePath(sessionId), request);
    expectProblem(first, 503, "temporal-unavailable");
    expect(first.headers.get("retry-after")).toBe("2");

    const retry = await call("POST", messagePath(sessionId), request);
    expect(retry.status).toBe(202);
    expect(retry.body).toMatchObject({ delivery: "started", queueLength: 1 });
    await api.stage.result(refOf(sessionId));
    expect(await userTexts(sessionId)).toEqual(["[scenario:idem-lost] once"]);

    // The run has closed and the record is gone (as after an S3 loss): the same key still
    // names the same update, which Temporal answers from the closed run.
    await api.objects.remove(
      idempotencyRecordKey(api.objects.prefix, api.tenants.a, "answer-lost", "POST", messagePath(sessionId)),
    );
    const late = await api.call("POST", messagePath(sessionId), request);
    expect(late.status).toBe(202);
    expect(late.body).toEqual(retry.body);
    const description = await api.stage.client.workflow.getHandle(runWorkflowId(refOf(sessionId))).describe();
    expect(description.status.name).toBe("COMPLETED");
    expect(await userTexts(sessionId)).toEqual(["[scenario:idem-lost] once"]);
  });

  test("a message a live run took by signal: a retry after the run closed and its record was lost gets the first answer", async () => {
    slowEchoScenario(api.stage, "idem-live", 2_000);
    const sessionId = api.sessionId();
    const started = await api.call("POST", messagePath(sessionId), {
      json: { text: "[scenario:idem-live] go" },
    });
    expect(started.body.delivery).toBe("started");
    const request = {
      json: { text: "and this", delivery: "followUp" },
      headers: { "idempotency-key": "live-signal" },
    };
    const first = await call200(request, sessionId);
    expect(first).toMatchObject({ delivery: "queued", queueLength: 1, runId: started.body.runId });
    expect((await api.stage.result(refOf(sessionId))).status).toBe("completed");
    await api.objects.remove(
      idempotencyRecordKey(api.objects.prefix, api.tenants.a, "live-signal", "POST", messagePath(sessionId)),
    );
    // The run has closed: the retry would start a new run, but the run's result names the delivery.
    expect(await call200(request, sessionId)).toEqual(first);
    expect(await userTexts(sessionId)).toEqual(["[scenario:idem-live] go", "and this"]);
    await expectIntactSession(api.stage, refOf(sessionId));
  });

  test("S3 down after the delivery: a retry during the outage and one a lease (seconds) later both get the first answer, delivered once", async () => {
    slowEchoScenario(api.stage, "idem-s3", 3_000);
    const { proxy, settings } = await s3FaultProxy();
    const proxiedS3 = createS3Client(settings);
    const objects = new JsonObjects(proxiedS3, settings.bucket, settings.prefix);
    const logs: Record<string, unknown>[] = [];
    const runs = runsThrough({
      startUpdateWithStart: async (input, next) => {
        const output = await next(input);
        proxy.setFailureRate(1);
        return output;
      },
    });
    const deps = { objects, log: (record: Record<string, unknown>) => logs.push(record) };
    const sessionId = api.sessionId();
    const request = { json: { text: "[scenario:idem-s3] once" }, headers: { "idempotency-key": "s3-down" } };
    const claimedAt = Date.now();
    try {
      const first = await api.callerWith({ ...deps, runs: async () => runs })(
        "POST",
        messagePath(sessionId),
        request,
      );
      expect(first.status).toBe(202);
      expect(logs).toEqual([expect.objectContaining({ level: "warn", msg: "idempotency record not saved" })]);

      // The claim cannot be read: Temporal's update id deduplicates the delivery instead.
      const call = api.callerWith(deps);
      const duringOutage = await call("POST", messagePath(sessionId), request);
      expect(duringOutage.status).toBe(202);
      expect(duringOutage.body).toEqual(first.body);
      expect(logs.at(-1)).toMatchObject({
        level: "warn",
        msg: expect.stringContaining("record unavailable"),
      });

      proxy.setFailureRate(0);
      // The first request's claim is still pending (its final write failed): within its lease a
      // retry is refused (the clock is pinned: the SDK's retries during the outage take seconds).
      const withinLease = api.callerWith({ ...deps, now: () => claimedAt + 1_000 });
      expectProblem(
        await withinLease("POST", messagePath(sessionId), request),
        409,
        "idempotency-key-in-use",
      );

      const later = api.callerWith({ ...deps, now: () => claimedAt + DEDUPLICATED_CLAIM_LEASE_MS + 1_000 });
      const takenOver = await later("POST", messagePath(sessionId), request);
      expect(takenOver.status).toBe(202);
      expect(takenOver.body).toEqual(first.body);
      await api.stage.result(refOf(sessionId));
      expect(await userTexts(sessionId)).toEqual(["[scenario:idem-s3] once"]);
      expect(logs.some((record) => record.msg === "unhandled error")).toBe(false);
    } finally {
      proxiedS3.destroy();
    }
  });

  test("routes that rely on the record alone keep a claim for minutes: a fork retried seconds later is 409, not run twice", async () => {
    const ref = refOf(api.sessionId());
    await api.stage.store.importEntries(
      ref,
      createSessionHeader(ref.sessionId, new Date().toISOString(), ""),
      [],
    );
    const forkPath = `/v1/sessions/${ref.sessionId}/fork`;
    const request = { json: { entryId: "missing" }, headers: { "idempotency-key": "fork-pending" } };
    // A claim left pending by a fork whose answer could not be recorded.
    const key = idempotencyRecordKey(api.objects.prefix, api.tenants.a, "fork-pending", "POST", forkPath);
    const requestHash = createHash("sha256")
      .update(`POST ${forkPath}\n${JSON.stringify(request.json)}`)
      .digest("hex");
    await api.objects.overwrite(key, { state: "pending", requestHash, startedAt: Date.now() });
    const later = api.callerWith({ now: () => Date.now() + DEDUPLICATED_CLAIM_LEASE_MS + 1_000 });
    expectProblem(await later("POST", forkPath, request), 409, "idempotency-key-in-use");
    const stale = api.callerWith({ now: () => Date.now() + STALE_CLAIM_MS + 1_000 });
    expectProblem(await stale("POST", forkPath, request), 404, "entry-not-found");
  });
});

/**
 * JsonObjects whose first `parties` versioned reads wait for each other: every request reads the
 * record before any takes it over, the race the conditional takeover must decide.
 */
class ReadBarrierObjects extends JsonObjects {
  private arrivals = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly parties: number) {
    const settings = s3Settings();
    super(s3Client(), settings.bucket, settings.prefix);
  }

  override async readVersioned<T>(key: string, schema: z.ZodType<T>) {
    const read = await super.readVersioned(key, schema);
    this.arrivals += 1;
    if (this.arrivals < this.parties) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else if (this.arrivals === this.parties) for (const release of this.waiting.splice(0)) release();
    return read;
  }
}

describe("a stale claim is taken over once", () => {
  test("two retries that both read one stale claim: one takes it over and runs, the other is 409", async () => {
    const ref = refOf(api.sessionId());
    await api.stage.store.importEntries(
      ref,
      createSessionHeader(ref.sessionId, new Date().toISOString(), ""),
      [],
    );
    const forkPath = `/v1/sessions/${ref.sessionId}/fork`;
    const request = { json: { entryId: "missing" }, headers: { "idempotency-key": "fork-stale" } };
    const key = idempotencyRecordKey(api.objects.prefix, api.tenants.a, "fork-stale", "POST", forkPath);
    const requestHash = createHash("sha256")
      .update(`POST ${forkPath}\n${JSON.stringify(request.json)}`)
      .digest("hex");
    await api.objects.overwrite(key, { state: "pending", requestHash, startedAt: Date.now() });
    const retry = api.callerWith({
      objects: new ReadBarrierObjects(2),
      now: () => Date.now() + STALE_CLAIM_MS + 1_000,
    });
    const answers = await Promise.all([retry("POST", forkPath, request), retry("POST", forkPath, request)]);
    // The fork ran once: one answer is its own 404. The other retry either read the winner's fresh
    // claim (409) or, when the winner had already finished, the winner's recorded answer (a replay).
    const ran = answers.filter((answer) => !answer.headers.has(REPLAYED_HEADER) && answer.status === 404);
    expect(ran).toHaveLength(1);
    expectProblem(ran[0]!, 404, "entry-not-found");
    const other = answers.find((answer) => answer !== ran[0])!;
    if (other.status === 409) expectProblem(other, 409, "idempotency-key-in-use");
    else
      expect({ status: other.status, replayed: other.headers.get(REPLAYED_HEADER) }).toEqual({
        status: 404,
        replayed: "true",
      });
  });
});

describe("maintenance never races a run", () => {
  test("a run that starts between a label's check and its write: the label is refused, the run is untouched", async () => {
    slowEchoScenario(api.stage, "label-race", 1_000);
    const sessionId = api.sessionId();
    const first = await api.call("POST", messagePath(sessionId), {
      json: { text: "[scenario:label-race] one" },
    });
    expect(first.status).toBe(202);
    await api.stage.result(refOf(sessionId));
    const [target] = await api.stage.entries(refOf(sessionId));

    // The session's description (the API's "is a run live?" check) is read while idle; right
    // after it, a run starts.
    let raced = false;
    const runs = runsThrough({
      describe: async (input, next) => {
        const output = await next(input);
        if (!raced) {
          raced = true;
          await api.stage.runs.deliver(
            refOf(sessionId),
            { text: "[scenario:label-race] two", mode: "auto" },
            api.stage.settings(),
          );
        }
        return output;
      },
    });
    const labelled = await api.callerWith({ runs: async () => runs })(
      "POST",
      `/v1/sessions/${sessionId}/labels`,
      {
        json: { entryId: target!.id, label: "raced" },
      },
    );
    expect(raced).toBe(true);
    expectProblem(labelled, 409, "run-busy");
    expect((await api.stage.result(refOf(sessionId))).status).toBe("completed");
    const entries = await expectIntactSession(api.stage, refOf(sessionId));
    expect(entries.some((entry) => entry.type === "label")).toBe(false);
    expect(await userTexts(sessionId)).toEqual(["[scenario:label-race] one", "[scenario:label-race] two"]);
  });
});

describe("a run whose workflow failed says so", () => {
  let server: Server;
  let baseUrl: string;

  beforeAll(async () => {
    const started = await startApiServer(api.app, 0);
    server = started.server as Server;
    baseUrl = `http://127.0.0.1:${started.port}`;
  });

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  const followWithCli = (sessionId: string) =>
    runKeel(["events", sessionId, "--follow"], { KEEL_API_URL: baseUrl, KEEL_API_KEY: api.keys.a });

  /** The SSE stream read to its end (it must end by itself). */
  async function sseUntilEnd(sessionId: string): Promise<string> {
    const response = await fetch(`${baseUrl}/v1/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${api.keys.a}`, accept: "text/event-stream" },
      signal: AbortSignal.timeout(20_000),
    });
    return response.text();
  }

  test("terminated: status terminated with the reason, events end, --follow exits 1", async () => {
    api.stage.llm.addScenario("ended-terminated", { turns: [], after: { text: "never" } });
    api.stage.llm.addFaults([{ kind: "hang", match: { scenario: "ended-terminated" } }]);
    const sessionId = api.sessionId();
    const started = await api.call("POST", messagePath(sessionId), {
      json: { text: "[scenario:ended-terminated] think" },
    });
    expect(started.status).toBe(202);
    await modelCalled(api.stage, "ended-terminated");
    await api.stage.client.workflow
      .getHandle(runWorkflowId(refOf(sessionId)))
      .terminate("operator stopped it");

    const view = await api.call("GET", `/v1/sessions/${sessionId}`);
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({
      status: "idle",
      run: {
        runId: started.body.runId,
        status: "terminated",
        error: { type: "TerminatedFailure", message: "operator stopped it" },
        pendingToolCalls: [],
      },
    });
    const page = await api.call("GET", `/v1/sessions/${sessionId}/events`);
    expect(page.body).toMatchObject({ runEnded: true, run: { status: "terminated" } });
    await sseUntilEnd(sessionId);
    const followed = await followWithCli(sessionId);
    expect(followed.code).toBe(1);
  });

  test("a model call that fails for good ends the run as failed: status failed with the activity's error, --follow exits 1", async () => {
    // The API refuses models outside its catalog; a run started by another client with a model the
    // worker does not know fails its model call for good (UnknownModel is not retried). The run
    // closes its session, records why and ends as failed.
    const ref = api.stage.newSession();
    const started = await api.stage.runs.deliver(
      ref,
      { text: "think", mode: "auto" },
      api.stage.settings({ model: "no-such-model" }),
    );
    expect(await api.stage.result(ref)).toMatchObject({ status: "failed" });

    const view = await api.call("GET", `/v1/sessions/${ref.sessionId}`);
    expect(view.body).toMatchObject({
      status: "idle",
      run: {
        runId: started.runId,
        status: "failed",
        error: { type: "UnknownModel", message: expect.stringContaining('Unknown model "no-such-model"') },
      },
    });
    const page = await api.call("GET", `/v1/sessions/${ref.sessionId}/events`);
    expect(page.body).toMatchObject({
      runEnded: true,
      run: { status: "failed", error: { type: "UnknownModel" } },
    });
    await sseUntilEnd(ref.sessionId);
    expect((await followWithCli(ref.sessionId)).code).toBe(1);
  });
});

describe("dependencies down: 503 problem+json with Retry-After and one clear log line", () => {
  test("S3 unreachable", async () => {
    const { proxy, settings } = await s3FaultProxy();
    proxy.setFailureRate(1);
    const proxiedS3 = createS3Client(settings);
    const logs: Record<string, unknown>[] = [];
    const call = api.callerWith({
      store: new SessionStore(proxiedS3, settings),
      objects: new JsonObjects(proxiedS3, settings.bucket, settings.prefix),
      log: (record) => logs.push(record),
    });
    try {
      for (const [method, path, headers] of [
        ["GET", "/v1/sessions", {}],
        ["GET", `/v1/sessions/${api.sessionId()}/entries`, {}],
        ["POST", `/v1/sessions/${api.sessionId()}/fork`, { "idempotency-key": "s3-unreachable" }],
      ] as const) {
        const response = await call(method, path, {
          headers,
          json: method === "POST" ? { entryId: "x" } : undefined,
        });
        expectProblem(response, 503, "storage-unavailable");
        expect(response.headers.get("retry-after")).toBe("2");
      }
      expect(logs.map((record) => record.msg)).toEqual(Array(3).fill("storage unavailable"));
    } finally {
      proxiedS3.destroy();
    }
  });

  test("Temporal unreachable", async () => {
    const [closedPort] = await freePorts(1);
    const temporal = new LazyRunClient(
      { address: `127.0.0.1:${closedPort}`, namespace: temporalNamespace() },
      api.stage.taskQueue,
    );
    const logs: Record<string, unknown>[] = [];
    const call = api.callerWith({
      runs: () => temporal.get(),
      onFailure: (error) => temporal.reportFailure(error),
      log: (record) => logs.push(record),
    });
    try {
      const sessionId = api.sessionId();
      for (const [method, path] of [
        ["POST", messagePath(sessionId)],
        ["GET", `/v1/sessions/${sessionId}`],
      ] as const) {
        const response = await call(method, path, {
          json: method === "POST" ? { text: "hello" } : undefined,
        });
        expectProblem(response, 503, "temporal-unavailable");
        expect(response.headers.get("retry-after")).toBe("2");
      }
      expect(logs.map((record) => record.msg)).toEqual(["temporal unavailable", "temporal unavailable"]);
    } finally {
      await temporal.close();
    }
  });
});
