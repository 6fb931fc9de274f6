/**
 * Deleting a session removes everything stored for it in S3 (real S3 server): header, entries,
 * markers and the workspace snapshots (records, trees, blobs) — and afterwards every route
 * answers 404 for it, also while Temporal still holds its run (events included). A live run
 * makes it a 409.
 */
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { WorkflowNotFoundError } from "@temporalio/client";
import { runWorkflowId } from "../../../src/contracts/runs";
import type { RunClient } from "../../../src/run-client/run-client";
import { sessionPrefix } from "../../../src/store/session-keys";
import { s3Client, s3Settings } from "../../support/integration-env";
import { eventually, modelCalled, slowEchoScenario } from "../../support/run-harness";
import { type ApiStage, type Caller, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;
const s3 = s3Client();

beforeAll(async () => {
  api = await createApiStage();
  api.stage.llm.addScenario("ws-delete", {
    turns: [
      {
        toolCalls: [
          { name: "write", arguments: { path: "a.txt", content: "one\n" } },
          { name: "bash", arguments: { command: "mkdir -p d && echo two > d/b.txt" } },
        ],
      },
    ],
    after: { text: "done" },
  });
  slowEchoScenario(api.stage, "ws-delete-slow", 20_000);
});

afterAll(async () => {
  s3.destroy();
  await api?.close();
});

/** Every key stored under the session's folder. */
async function storedKeys(sessionId: string): Promise<string[]> {
  const folder = sessionPrefix(s3Settings().prefix, { tenantId: api.tenants.a, sessionId });
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket: s3Settings().bucket, Prefix: folder, ContinuationToken: token }),
    );
    keys.push(
      ...(page.Contents ?? []).flatMap((object) => (object.Key ? [object.Key.slice(folder.length)] : [])),
    );
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

test("DELETE removes the session's entries and its workspace blobs, trees and snapshot records", async () => {
  const sessionId = api.sessionId();
  await api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: { text: "[scenario:ws-delete] go" } });
  expect((await api.stage.result({ tenantId: api.tenants.a, sessionId })).status).toBe("completed");
  const before = await storedKeys(sessionId);
  for (const folder of [
    "entries/",
    "workspace/blobs/",
    "workspace/trees/",
    "workspace/snapshots/",
    "markers/",
  ]) {
    expect(before.some((key) => key.startsWith(folder))).toBe(true);
  }
  expect(before).toContain("header.json");

  const deleted = await api.call("DELETE", `/v1/sessions/${sessionId}`);
  expect(deleted.status).toBe(200);
  expect(deleted.body).toEqual({ sessionId, deletedObjects: before.length });
  expect(await storedKeys(sessionId)).toEqual([]);
  await expectGone(api.call, sessionId);
  // Temporal's copy of the run (its events included) is deleted too, by the server in the
  // background (tens of seconds on a busy dev server).
  const handle = api.stage.client.workflow.getHandle(runWorkflowId({ tenantId: api.tenants.a, sessionId }));
  await eventually(
    () =>
      handle.describe().then(
        () => undefined,
        (error: unknown) => (error instanceof WorkflowNotFoundError ? true : Promise.reject(error)),
      ),
    120_000,
    "the run's history deleted",
  );
  expectProblem(await api.call("DELETE", `/v1/sessions/${api.sessionId()}`), 404, "session-not-found");
}, 240_000);

test("while Temporal still holds the deleted session's run, every route answers 404; a later run is a new session", async () => {
  const sessionId = api.sessionId();
  await api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: { text: "[scenario:ws-delete] go" } });
  expect((await api.stage.result({ tenantId: api.tenants.a, sessionId })).status).toBe("completed");
  expect((await api.call("GET", `/v1/sessions/${sessionId}/events`)).body.events.length).toBeGreaterThan(0);
  // Temporal refuses to delete the histories: the run and its events stay there.
  const keepsHistories = Object.create(api.stage.runs, {
    deleteHistories: { value: () => Promise.reject(new Error("Temporal refused the deletion")) },
  }) as RunClient;
  const call = api.callerWith({ runs: async () => keepsHistories });
  expect((await call("DELETE", `/v1/sessions/${sessionId}`)).status).toBe(200);
  await api.stage.client.workflow.getHandle(runWorkflowId({ tenantId: api.tenants.a, sessionId })).describe();
  await expectGone(call, sessionId);
  expectProblem(await call("DELETE", `/v1/sessions/${sessionId}`), 404, "session-not-found");

  // A message to the same id starts a new session, which answers with its own entries only.
  await call("POST", `/v1/sessions/${sessionId}/messages`, { json: { text: "hello again" } });
  expect((await api.stage.result({ tenantId: api.tenants.a, sessionId })).status).toBe("completed");
  const view = await call("GET", `/v1/sessions/${sessionId}`);
  expect(view.status).toBe(200);
  const entries = await call("GET", `/v1/sessions/${sessionId}/entries`);
  expect(JSON.stringify(entries.body)).not.toContain("ws-delete");
}, 120_000);

/** Every route reading the session answers 404 session-not-found. */
async function expectGone(call: Caller, sessionId: string): Promise<void> {
  const session = `/v1/sessions/${sessionId}`;
  for (const path of [
    session,
    `${session}/events`,
    `${session}/events?after=0`,
    `${session}/entries`,
    `${session}/export`,
    `${session}/export?workspace=true`,
  ]) {
    expectProblem(await call("GET", path), 404, "session-not-found");
  }
  expectProblem(
    await call("GET", `${session}/events`, { headers: { accept: "text/event-stream" } }),
    404,
    "session-not-found",
  );
  expectProblem(
    await call("POST", `${session}/approvals/call-1`, { json: { decision: "approve" } }),
    404,
    "session-not-found",
  );
  expectProblem(await call("POST", `${session}/abort`, { json: {} }), 404, "session-not-found");
  for (const [path, json] of [
    ["fork", { entryId: "e1" }],
    ["branch", { entryId: "e1" }],
    ["labels", { entryId: "e1", label: "x" }],
    ["compact", {}],
  ] as const) {
    expectProblem(await call("POST", `${session}/${path}`, { json }), 404, "session-not-found");
  }
  const listed = await call("GET", "/v1/sessions?limit=1000");
  expect(listed.body.sessions.map((s: { sessionId: string }) => s.sessionId)).not.toContain(sessionId);
}

test("a session with a live run is not deleted (409), and nothing of it is removed", async () => {
  const sessionId = api.sessionId();
  await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: { text: "[scenario:ws-delete-slow] wait" },
  });
  await modelCalled(api.stage, "ws-delete-slow");
  const before = await storedKeys(sessionId);
  expectProblem(await api.call("DELETE", `/v1/sessions/${sessionId}`), 409, "run-busy");
  expect(await storedKeys(sessionId)).toEqual(before);
  await api.call("POST", `/v1/sessions/${sessionId}/abort`, { json: { reason: "test over" } });
  await api.stage.result({ tenantId: api.tenants.a, sessionId });
}, 120_000);
