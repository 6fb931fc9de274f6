/**
 * Deleting a session removes everything stored for it in S3 (real S3 server): header, entries,
 * markers and the workspace snapshots (records, trees, blobs). A live run makes it a 409.
 */
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { sessionPrefix } from "../../../src/store/session-keys";
import { s3Client, s3Settings } from "../../support/integration-env";
import { modelCalled, slowEchoScenario } from "../../support/run-harness";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

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
  // Temporal keeps the finished run's history (references only) for the namespace's retention:
  // the session still answers, with nothing stored, and deleting it again deletes nothing.
  expect((await api.call("GET", `/v1/sessions/${sessionId}`)).body).toMatchObject({
    entryCount: 0,
    leafId: null,
  });
  expect((await api.call("DELETE", `/v1/sessions/${sessionId}`)).body).toEqual({
    sessionId,
    deletedObjects: 0,
  });
  expectProblem(await api.call("DELETE", `/v1/sessions/${api.sessionId()}`), 404, "session-not-found");
}, 120_000);

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
