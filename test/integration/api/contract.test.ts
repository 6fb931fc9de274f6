/**
 * What the OpenAPI document promises and what the server does agree, through the Node server as
 * deployed locally: query bounds, Idempotency-Key format, catalog models, import bodies, 405 with
 * `Allow`, and problem+json answers to over-long ids and request heads.
 */
import type { Server } from "node:http";
import { startApiServer } from "../../../src/api/server";
import { loadCatalog } from "../../../src/providers/models";
import { type ApiStage, createApiStage, expectProblem, PROBLEM_JSON } from "./api-stage";

let api: ApiStage;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  api = await createApiStage({ withWorker: false });
  const started = await startApiServer(api.app, 0);
  server = started.server as Server;
  baseUrl = `http://127.0.0.1:${started.port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await api?.close();
});

/** A request through the Node server (not `app.request`): Node's own limits apply. */
async function overHttp(method: string, path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${api.keys.a}`, ...headers },
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text ? JSON.parse(text) : undefined,
  };
}

async function importedSession(): Promise<string> {
  const header = { type: "session", version: 3, id: "x", timestamp: new Date().toISOString(), cwd: "/w" };
  const created = await api.call("POST", "/v1/sessions/import", { json: header });
  expect(created.status).toBe(201);
  return created.body.sessionId;
}

test("over-long ids get a 400 problem; a request head past the server's limit a 431 problem, never an empty body", async () => {
  const longId = await overHttp("GET", `/v1/sessions/${"a".repeat(100_000)}`);
  expectProblem(longId, 400, "invalid-request");

  const huge = await overHttp("GET", `/v1/sessions/${"a".repeat(300_000)}`);
  expectProblem(huge, 431, "request-too-large");
});

test("a tool-call id that reads as a path is a 400, not a 409", async () => {
  const sessionId = await importedSession();
  const response = await api.call("POST", `/v1/sessions/${sessionId}/approvals/..%2Fx`, {
    json: { decision: "approve" },
  });
  expectProblem(response, 400, "invalid-request");
  expect(response.body.errors).toEqual([expect.objectContaining({ path: "toolCallId" })]);
  // A well-formed id that is not waiting still gets the run's answer.
  expectProblem(
    await api.call("POST", `/v1/sessions/${sessionId}/approvals/call_1%7Cfc_2`, {
      json: { decision: "approve" },
    }),
    409,
    "no-pending-approval",
  );
});

test("a method the path does not serve is 405 with Allow; `import` is not a session id", async () => {
  const patch = await overHttp("PATCH", "/v1/sessions/import");
  expectProblem(patch, 405, "method-not-allowed");
  expect(patch.headers.get("allow")).toBe("POST");
  const messages = await overHttp("DELETE", `/v1/sessions/${api.sessionId()}/messages`);
  expectProblem(messages, 405, "method-not-allowed");
  expect(messages.headers.get("allow")).toBe("POST");
  expect((await overHttp("GET", "/v1/sessions")).status).toBe(200);
  const readImport = await overHttp("GET", "/v1/sessions/import");
  expectProblem(readImport, 405, "method-not-allowed");
  expect(readImport.headers.get("allow")).toBe("POST");
  expectProblem(await overHttp("GET", "/v1/sessions/import/entries"), 400, "invalid-request");
  expectProblem(await overHttp("GET", "/v1/no-such-route"), 404, "not-found");
});

test("import bodies: what the document allows is imported, anything else is refused", async () => {
  const wire = await api.call("POST", "/v1/sessions/import", { json: { messages: [], extra: true } });
  expect(wire.status).toBe(201);
  const both = await api.call("POST", "/v1/sessions/import", { json: { type: "session", messages: [] } });
  expect(both.status).toBe(201);
  expectProblem(
    await api.call("POST", "/v1/sessions/import", { json: { messages: 5 } }),
    400,
    "invalid-session-file",
  );
});

test("the document declares the bounds the server checks", async () => {
  const response = await api.call("GET", "/v1/openapi.json", { key: null });
  expect(response.status).toBe(200);
  const paths = response.body.paths;
  const parameter = (path: string, method: string, name: string) =>
    paths[path][method].parameters.find((candidate: { name: string }) => candidate.name === name)?.schema;

  expect(parameter("/v1/sessions", "get", "limit")).toMatchObject({
    type: "integer",
    minimum: 1,
    maximum: 1000,
  });
  expect(parameter("/v1/sessions/{sessionId}/events", "get", "after")).toMatchObject({
    type: "integer",
    minimum: 0,
  });
  expect(parameter("/v1/sessions/{sessionId}/entries", "get", "limit")).toMatchObject({
    minimum: 1,
    maximum: 1000,
  });
  const key = parameter("/v1/sessions/{sessionId}/messages", "post", "Idempotency-Key");
  expect(key).toMatchObject({ minLength: 1, maxLength: 255, pattern: expect.any(String) });
  const keyPattern = new RegExp(key.pattern);
  expect(["k", "a b", "x".repeat(255)].every((value) => keyPattern.test(value))).toBe(true);
  expect([" a", "a ", "é", "x".repeat(256)].some((value) => keyPattern.test(value))).toBe(false);
  // The server refuses what the pattern refuses.
  for (const bad of ["é", "x".repeat(256)]) {
    expectProblem(
      await api.call("POST", `/v1/sessions/${api.sessionId()}/abort`, {
        json: {},
        headers: { "idempotency-key": bad },
      }),
      400,
      "invalid-request",
    );
  }

  const message = response.body.components.schemas.MessageRequest;
  // A catalog id (an enum of this deployment's catalog) or a model named in one line (a pattern).
  const [catalogIds, oneLine] = message.properties.model.anyOf;
  expect(oneLine).toMatchObject({ type: "string", pattern: expect.stringContaining("openai-compatible") });
  expect([...catalogIds.enum].sort()).toEqual(
    loadCatalog()
      .list()
      .map((model) => model.id)
      .sort(),
  );
  expect(parameter("/v1/sessions/{sessionId}", "get", "sessionId").pattern).toContain("(?!");

  for (const [path, methods] of Object.entries(paths) as [string, Record<string, { responses: object }>][]) {
    for (const [method, operation] of Object.entries(methods)) {
      expect({ path, method, has431: "431" in operation.responses }).toEqual({ path, method, has431: true });
    }
  }
  expect(response.headers.get("content-type")).not.toBe(PROBLEM_JSON);
});
