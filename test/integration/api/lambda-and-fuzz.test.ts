/**
 * The Lambda handler (real module, configured from the environment like a deployment) against
 * the local app with API Gateway HTTP API v2 events; and property-based fuzzing of every route.
 */
import fc from "fast-check";
import { type ApiStage, createApiStage, PROBLEM_JSON } from "./api-stage";
import { configureLambda, invoke, type V2Options } from "./lambda-events";

let api: ApiStage;

// The handler reads its configuration on the first invocation, so the environment set here is
// the one it sees (as a deployment's would be).
beforeAll(async () => {
  api = await createApiStage();
  configureLambda(api);
});

afterAll(async () => {
  await api?.close();
});

test("the Lambda handler answers API Gateway v2 events like the local app (base64 bodies, cookies)", async () => {
  const auth = { authorization: `Bearer ${api.keys.a}` };
  const sessionId = api.sessionId();
  const started = await invoke({
    method: "POST",
    path: `/v1/sessions/${sessionId}/messages`,
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ text: "via lambda" }),
    base64: true,
    cookies: ["theme=dark", "session=abc"],
  });
  expect(started.status).toBe(202);
  expect(JSON.parse(started.body)).toMatchObject({ sessionId, delivery: "started" });
  await api.stage.result({ tenantId: api.tenants.a, sessionId });

  const cases: V2Options[] = [
    { method: "GET", path: `/v1/sessions/${sessionId}`, headers: auth },
    { method: "GET", path: `/v1/sessions/${sessionId}/entries`, query: "limit=1", headers: auth },
    { method: "GET", path: `/v1/sessions/${sessionId}/export`, headers: auth, cookies: ["a=b"] },
    { method: "GET", path: `/v1/sessions/${sessionId}/events`, query: "after=3", headers: auth },
    { method: "GET", path: `/v1/sessions/${sessionId}`, headers: { authorization: `Bearer ${api.keys.b}` } },
    { method: "GET", path: "/v1/sessions" },
    { method: "GET", path: "/healthz" },
    {
      method: "POST",
      path: `/v1/sessions/${sessionId}/messages`,
      headers: { ...auth, "content-type": "application/json" },
      body: "{not json",
      base64: true,
    },
    {
      method: "POST",
      path: `/v1/sessions/${sessionId}/abort`,
      headers: { ...auth, "content-type": "application/json" },
      body: "{}",
    },
  ];
  for (const options of cases) {
    const viaLambda = await invoke(options);
    const local = await api.app.request(`${options.path}${options.query ? `?${options.query}` : ""}`, {
      method: options.method,
      headers: options.headers,
      body: options.body,
    });
    expect({ path: options.path, status: viaLambda.status, body: viaLambda.body }).toEqual({
      path: options.path,
      status: local.status,
      body: await local.text(),
    });
    expect(viaLambda.headers["content-type"]).toBe(local.headers.get("content-type"));
  }

  const imported = await invoke({
    method: "POST",
    path: "/v1/sessions/import",
    headers: { ...auth, "content-type": "application/x-ndjson" },
    body: await (await api.app.request(`/v1/sessions/${sessionId}/export`, { headers: auth })).text(),
    base64: true,
  });
  expect(imported.status).toBe(201);
  expect(JSON.parse(imported.body).entryCount).toBe(2);
});

// ---- Fuzzing

const ROUTES: Array<{ method: string; path: (id: string, extra: string) => string }> = [
  { method: "POST", path: (id) => `/v1/sessions/${id}/messages` },
  { method: "GET", path: (id) => `/v1/sessions/${id}` },
  { method: "GET", path: () => "/v1/sessions" },
  { method: "POST", path: (id) => `/v1/sessions/${id}/abort` },
  { method: "POST", path: (id, extra) => `/v1/sessions/${id}/approvals/${extra}` },
  { method: "GET", path: (id) => `/v1/sessions/${id}/events` },
  { method: "GET", path: (id) => `/v1/sessions/${id}/entries` },
  { method: "GET", path: (id) => `/v1/sessions/${id}/export` },
  { method: "POST", path: () => "/v1/sessions/import" },
  { method: "POST", path: (id) => `/v1/sessions/${id}/fork` },
  { method: "POST", path: (id) => `/v1/sessions/${id}/replay` },
  { method: "POST", path: (id) => `/v1/sessions/${id}/branch` },
  { method: "POST", path: (id) => `/v1/sessions/${id}/compact` },
  { method: "POST", path: () => "/v1/integrations/slack/events" },
];

const idArbitrary = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,20}$/),
  fc.constantFrom("..", ".", "a/b", "%2e%2e", "session-1", "x".repeat(200), "\u0000", "s p a c e"),
);

const bodyArbitrary = fc.oneof(
  fc.json(),
  fc
    .record({
      text: fc.string({ minLength: 1, maxLength: 20 }),
      delivery: fc.constantFrom("auto", "steer", "followUp", "interrupt", "reject"),
    })
    .map((value) => JSON.stringify(value)),
  fc.string({ maxLength: 200 }),
  fc
    .record(
      {
        text: fc.oneof(fc.string({ maxLength: 30 }), fc.integer()),
        delivery: fc.oneof(fc.constantFrom("auto", "steer", "followUp", "interrupt", "reject"), fc.string()),
        model: fc.oneof(fc.constant("local-chat"), fc.string({ maxLength: 10 })),
        tools: fc.array(fc.oneof(fc.constantFrom("bash", "read"), fc.string({ maxLength: 5 })), {
          maxLength: 3,
        }),
        policy: fc.record({
          rules: fc.array(
            fc.record({ tool: fc.string(), argumentsPattern: fc.string(), action: fc.string() }),
            { maxLength: 2 },
          ),
        }),
        workspace: fc.oneof(
          fc.record({
            type: fc.constantFrom("empty", "git", "directory", "x"),
            url: fc.string(),
            path: fc.string(),
          }),
        ),
        decision: fc.constantFrom("approve", "reject", "maybe"),
        entryId: fc.string({ maxLength: 20 }),
        summarize: fc.anything(),
        instructions: fc.anything(),
        reason: fc.anything(),
      },
      { requiredKeys: [] },
    )
    .map((value) => JSON.stringify(value)),
);

const headersArbitrary = fc.record(
  {
    "content-type": fc.constantFrom(
      "application/json",
      "application/x-ndjson",
      "text/plain",
      "multipart/form-data",
      "application/json; charset=utf-8",
      "",
    ),
    "idempotency-key": fc.string({ maxLength: 30 }),
    accept: fc.constantFrom("application/json", "*/*", "text/html"),
    "last-event-id": fc.string({ maxLength: 10 }),
    "x-slack-signature": fc.string({ maxLength: 20 }),
    "x-slack-request-timestamp": fc.oneof(fc.string({ maxLength: 12 }), fc.nat().map(String)),
    authorization: fc.oneof(fc.constant("VALID"), fc.string({ maxLength: 30 }), fc.constant("Bearer ")),
  },
  { requiredKeys: [] },
);

test("fuzzed bodies, headers and ids on every route give 2xx or a 4xx problem, never 5xx", async () => {
  const statuses = new Set<number>();
  await fc.assert(
    fc.asyncProperty(
      fc.nat({ max: ROUTES.length - 1 }),
      idArbitrary,
      idArbitrary,
      fc.oneof(bodyArbitrary, fc.constant(undefined)),
      headersArbitrary,
      fc.string({ maxLength: 20 }),
      fc.boolean(),
      async (routeIndex, id, extra, body, rawHeaders, query, encode) => {
        const route = ROUTES[routeIndex]!;
        const encodeId = (value: string) =>
          encode ? encodeURIComponent(value) : value.replace(/[\s?#]/g, "_");
        const path = route.path(encodeId(id), encodeId(extra));
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(rawHeaders)) {
          // Header values must be ByteStrings without control characters.
          const safe = value.replace(/[^\x20-\x7e]/g, "");
          if (safe) headers[name] = safe;
        }
        if (headers.authorization === "VALID" || headers.authorization === undefined) {
          headers.authorization = `Bearer ${api.keys.a}`;
        }
        let url = `http://localhost${path}`;
        if (query)
          url += `?after=${encodeURIComponent(query)}&limit=${encodeURIComponent(query)}&cursor=${encodeURIComponent(query)}`;
        let response: Response;
        try {
          response = await api.app.request(url, {
            method: route.method,
            headers,
            body: route.method === "POST" ? body : undefined,
          });
        } catch (error) {
          // A URL the fetch layer itself refuses never reaches the app.
          if (error instanceof TypeError) return;
          throw error;
        }
        const text = await response.text();
        statuses.add(response.status);
        expect({ status: response.status, text }).toEqual({
          status: expect.any(Number),
          text: expect.any(String),
        });
        if (response.status >= 500) throw new Error(`${route.method} ${url} → ${response.status}: ${text}`);
        if (response.status >= 400) {
          expect(response.headers.get("content-type")).toBe(PROBLEM_JSON);
          const problem = JSON.parse(text);
          expect(problem.type).toMatch(/^https:\/\/keel\.dev\/problems\/[a-z-]+$/);
          expect(problem.status).toBe(response.status);
        }
      },
    ),
    { numRuns: 250, seed: Number(process.env.KEEL_FUZZ_SEED ?? Date.now() % 1_000_000) },
  );
  // The generators reach past authentication and validation, not only the first gate.
  expect([...statuses].sort()).toEqual(expect.arrayContaining([400, 401, 404]));
}, 120_000);
