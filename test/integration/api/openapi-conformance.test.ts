/**
 * The OpenAPI document describes what the routes answer. Every operation it lists is driven
 * through the real stack (Temporal, S3, worker, local LLM), and each answer is checked against
 * the document: its status is one the operation declares, its content type one that status
 * declares, and a JSON body validates against that content's schema with undeclared properties
 * refused (a zod object strips what it does not name, so the document's objects are closed unless
 * they say otherwise).
 */
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import { EnvironmentStore } from "../../../src/environments/store";
import { DEFAULT_WEBHOOK_SETTINGS } from "../../../src/integrations/webhook-sender";
import { parseModelUrls } from "../../../src/providers/model-urls";
import { ToolCallMarkers } from "../../../src/store/tool-call-markers";
import { SecretStore } from "../../../src/tenants/secrets";
import { WebhookStore } from "../../../src/tenants/webhooks";
import { parseGitHosts } from "../../../src/tools/git-source";
import { LocalKeyWrapper } from "../../../src/vault/key-wrapper";
import { s3Client, s3Settings } from "../../support/integration-env";
import { eventually } from "../../support/run-harness";
import { type ApiResponse, type ApiStage, type CallOptions, createApiStage } from "./api-stage";

type JsonSchema = { [keyword: string]: unknown };

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema> };
}

let api: ApiStage;
let document: OpenApiDocument;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
const validators = new Map<string, ValidateFunction>();
/** `METHOD template` of every operation driven so far. */
const exercised = new Set<string>();

beforeAll(async () => {
  // One-line models may name the local LLM server: a model without prices, whose usage says so.
  const s3 = s3Settings();
  const vault = new SecretStore(s3Client(), s3, new LocalKeyWrapper(Buffer.alloc(32, 7)));
  api = await createApiStage({
    overrides: {
      environments: {
        store: new EnvironmentStore(s3Client(), s3.bucket, s3.prefix),
        markers: new ToolCallMarkers(s3Client(), s3),
      },
      vault,
      webhooks: new WebhookStore(s3Client(), s3, vault),
    },
    config: (stage) => ({
      outbound: {
        modelUrls: parseModelUrls(stage.llm.url),
        providerBaseUrls: {},
        gitHosts: parseGitHosts(undefined),
      },
      webhooks: { ...DEFAULT_WEBHOOK_SETTINGS, hosts: ["hooks.example.test"] },
    }),
  });
  const response = await api.call("GET", "/v1/openapi.json", { key: null });
  expect(response.status).toBe(200);
  document = response.body;
});

afterAll(async () => {
  await api?.close();
});

/**
 * The schema with every object that does not say otherwise closed: `unevaluatedProperties: false`
 * where neither `additionalProperties` nor `unevaluatedProperties` is given.
 */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (schema === null || typeof schema !== "object") return schema;
  const result: JsonSchema = Object.fromEntries(
    Object.entries(schema).map(([keyword, value]) => [keyword, closed(value)]),
  );
  const isObject = result.type === "object" || result.properties !== undefined;
  if (isObject && !("additionalProperties" in result) && !("unevaluatedProperties" in result)) {
    result.unevaluatedProperties = false;
  }
  return result;
}

function validatorFor(key: string, schema: JsonSchema): ValidateFunction {
  let validate = validators.get(key);
  if (!validate) {
    // The components ride along, so `#/components/schemas/…` resolves against this root.
    validate = ajv.compile(closed({ ...schema, components: document.components }) as JsonSchema);
    validators.set(key, validate);
  }
  return validate;
}

/** What is wrong with `response` as an answer of `method template`, by the document: nothing, ideally. */
function violations(method: string, template: string, response: ApiResponse): string[] {
  const operation = document.paths[template]?.[method.toLowerCase()];
  if (!operation) return [`${method} ${template} is not in the document`];
  const declared = operation.responses[String(response.status)];
  if (!declared) return [`status ${response.status} is not declared (${response.text.slice(0, 300)})`];
  const contentType = response.headers.get("content-type")?.split(";")[0]?.trim();
  if (!declared.content) return response.text === "" ? [] : [`status ${response.status} declares no body`];
  const media = contentType ? declared.content[contentType] : undefined;
  if (!media) return [`content type ${contentType} is not declared for status ${response.status}`];
  const isJson = contentType === "application/json" || contentType?.endsWith("+json");
  if (!isJson || !media.schema) return [];
  const validate = validatorFor(`${method} ${template} ${response.status} ${contentType}`, media.schema);
  if (validate(response.body)) return [];
  return (validate.errors ?? []).map(
    (error) =>
      `${error.instancePath || "(body)"} ${error.message} ${JSON.stringify(error.params)} in ${response.text.slice(0, 2_000)}`,
  );
}

/**
 * Calls `method template` with the path's parameters filled in (`query` appended) and asserts the
 * answer is one the document declares; returns it.
 */
async function call(
  method: string,
  template: string,
  params: Record<string, string>,
  options: CallOptions & { query?: string } = {},
): Promise<ApiResponse> {
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ""));
  const response = await api.call(method, `${path}${options.query ?? ""}`, options);
  expect({ method, template, violations: violations(method, template, response) }).toEqual({
    method,
    template,
    violations: [],
  });
  exercised.add(`${method.toLowerCase()} ${template}`);
  return response;
}

const SESSION = "/v1/sessions/{sessionId}";

async function sessionWhere(sessionId: string, status: string): Promise<ApiResponse> {
  return eventually(async () => {
    const view = await call("GET", SESSION, { sessionId });
    return view.body.status === status ? view : undefined;
  });
}

/** A session whose run waits for the approval of a bash call. */
async function waitingForApproval(scenario: string): Promise<{ sessionId: string; toolCallId: string }> {
  api.stage.llm.addScenario(scenario, {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo approved" } }] }],
    after: { text: "Done: {{lastToolResult}}" },
  });
  const sessionId = api.sessionId();
  const started = await call(
    "POST",
    `${SESSION}/messages`,
    { sessionId },
    {
      json: {
        text: `[scenario:${scenario}] go`,
        policy: { rules: [{ tool: "bash", action: "ask" }], approvalTimeoutMs: 60_000 },
      },
    },
  );
  expect(started.status).toBe(202);
  // Read while waiting: the pending call is part of the view.
  const view = await sessionWhere(sessionId, "waiting_approval");
  return { sessionId, toolCallId: view.body.run.pendingToolCalls[0].toolCallId };
}

test("a run's session view, with the usage of a model without prices, is what the document says", async () => {
  const sessionId = api.sessionId();
  const model = `openai-compatible:unpriced@${api.stage.llm.url}`;
  const started = await call(
    "POST",
    `${SESSION}/messages`,
    { sessionId },
    { json: { text: "hello", model } },
  );
  expect(started.status).toBe(202);
  await api.stage.result({ tenantId: api.tenants.a, sessionId });
  const view = await call("GET", SESSION, { sessionId });
  // The usage the run reports says its cost was not computed: the document must say it can.
  expect(view.body.run.usage.cost.unpriced).toBe(true);
});

/** A session whose run paused at its cost budget after its first turn (a tool call), as its view shows. */
async function pausedAtBudget(scenario: string): Promise<{ sessionId: string }> {
  api.stage.llm.addScenario(scenario, {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "Done" },
  });
  const sessionId = api.sessionId();
  const started = await call(
    "POST",
    `${SESSION}/messages`,
    { sessionId },
    { json: { text: `[scenario:${scenario}] go`, limits: { maxCostUsd: 0.000_001 } } },
  );
  expect(started.status).toBe(202);
  const view = await sessionWhere(sessionId, "paused");
  expect(view.body.run).toMatchObject({
    status: "paused",
    pause: { reason: { type: "runBudget", budget: "cost" } },
  });
  return { sessionId };
}
// The admin API and usage reads, as the operator and as a tenant (a start over a quota included).
test("the admin API and usage reads match the document (before the operations are counted)", async () => {
  const sessionId = api.sessionId();
  const TENANTS = "/v1/admin/tenants";
  const admin = { key: api.adminKey };
  const tenantId = `conformance-${sessionId}`;
  expect(
    (await call("POST", TENANTS, {}, { ...admin, json: { id: tenantId, name: "Conformance" } })).status,
  ).toBe(201);
  expect((await call("POST", TENANTS, {}, { ...admin, json: { id: tenantId } })).status).toBe(409);
  expect((await call("GET", TENANTS, {}, { key: api.keys.a })).status).toBe(401);
  expect((await call("GET", TENANTS, {}, admin)).status).toBe(200);
  expect((await call("GET", `${TENANTS}/{tenantId}`, { tenantId }, admin)).status).toBe(200);
  expect((await call("GET", `${TENANTS}/{tenantId}`, { tenantId: "nobody" }, admin)).status).toBe(404);
  const issued = await call(
    "POST",
    `${TENANTS}/{tenantId}/keys`,
    { tenantId },
    { ...admin, json: { label: "ci" } },
  );
  expect(issued.status).toBe(201);
  expect((await call("GET", `${TENANTS}/{tenantId}/keys`, { tenantId }, admin)).status).toBe(200);
  const settings = {
    models: ["local-*"],
    defaults: { policy: { rules: [{ tool: "bash", action: "ask" }] }, limits: { maxTurns: 5 } },
    quotas: { concurrentRuns: 0 },
    // A Slack team no earlier run claimed (claims stay in the bucket).
    slack: { teams: { [`T${Date.now().toString(36).toUpperCase()}`]: { ask: ["bash"] } } },
  };
  expect(
    (await call("PUT", `${TENANTS}/{tenantId}/settings`, { tenantId }, { ...admin, json: settings })).status,
  ).toBe(200);
  expect(
    (await call("PUT", `${TENANTS}/{tenantId}/settings`, { tenantId }, { ...admin, json: { models: "x" } }))
      .status,
  ).toBe(400);
  expect((await call("GET", `${TENANTS}/{tenantId}/settings`, { tenantId }, admin)).status).toBe(200);
  // The tenant's own key: its settings refuse a model (403), its quota a start (429).
  const key = issued.body.key as string;
  const message = (json: unknown) =>
    call("POST", `${SESSION}/messages`, { sessionId: api.sessionId() }, { key, json });
  expect((await message({ text: "hi", model: "gpt-4.1" })).status).toBe(403);
  expect((await message({ text: "hi" })).status).toBe(429);
  expect((await call("GET", "/v1/usage", {}, { key })).status).toBe(200);
  expect((await call("GET", "/v1/usage", {}, { key, query: "?from=2026-02-01&to=2026-01-01" })).status).toBe(
    422,
  );
  expect((await call("GET", `${TENANTS}/{tenantId}/usage`, { tenantId }, admin)).status).toBe(200);
  const keyId = issued.body.id as string;
  expect(
    (await call("DELETE", `${TENANTS}/{tenantId}/keys/{keyId}`, { tenantId, keyId }, admin)).status,
  ).toBe(200);
  expect(
    (
      await call(
        "DELETE",
        `${TENANTS}/{tenantId}/keys/{keyId}`,
        { tenantId, keyId: "key_0000000000000000" },
        admin,
      )
    ).status,
  ).toBe(404);
});

test("the secrets routes' answers match the document (before the operations are counted)", async () => {
  const secret = "/v1/secrets/{name}";
  const body = { value: "conformance-value", hosts: ["api.example.com"] };
  expect((await call("PUT", secret, { name: "CONFORMANCE_TOKEN" }, { json: body })).status).toBe(201);
  expect(
    (await call("PUT", secret, { name: "CONFORMANCE_TOKEN" }, { json: { ...body, in: ["header"] } })).status,
  ).toBe(200);
  expect((await call("PUT", secret, { name: "PATH" }, { json: body })).status).toBe(400);
  expect((await call("GET", "/v1/secrets", {})).status).toBe(200);
  expect((await call("GET", secret, { name: "CONFORMANCE_TOKEN" })).status).toBe(200);
  expect((await call("GET", secret, { name: "NO_SUCH_SECRET" })).status).toBe(404);
  expect((await call("DELETE", secret, { name: "CONFORMANCE_TOKEN" })).status).toBe(204);
  expect((await call("DELETE", secret, { name: "CONFORMANCE_TOKEN" })).status).toBe(404);
});

test("the webhook routes' answers match the document (before the operations are counted)", async () => {
  const created = await call(
    "POST",
    "/v1/webhooks",
    {},
    {
      json: { url: "https://hooks.example.test/keel", events: ["run.completed"], description: "conformance" },
    },
  );
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  expect(
    (await call("POST", "/v1/webhooks", {}, { json: { url: "https://127.0.0.1/x", events: ["*"] } })).status,
  ).toBe(422);
  expect(
    (await call("POST", "/v1/webhooks", {}, { json: { url: "https://x.test", events: ["nope"] } })).status,
  ).toBe(400);
  expect((await call("GET", "/v1/webhooks", {})).status).toBe(200);
  expect((await call("GET", "/v1/webhooks/{id}", { id })).status).toBe(200);
  expect(
    (await call("POST", "/v1/webhooks/{id}/rotate", { id }, { json: { overlapSeconds: 60 } })).status,
  ).toBe(200);
  expect((await call("POST", "/v1/webhooks/{id}/test", { id })).status).toBe(202);
  expect((await call("GET", "/v1/webhooks/{id}/deliveries", { id })).status).toBe(200);
  expect((await call("DELETE", "/v1/webhooks/{id}", { id })).status).toBe(204);
  expect((await call("DELETE", "/v1/webhooks/{id}", { id })).status).toBe(404);
  expect((await call("GET", "/v1/webhooks/{id}/deliveries", { id })).status).toBe(404);
});

test("every operation's answers match the document", async () => {
  const sessionId = api.sessionId();
  const key = `conformance-${sessionId}`;
  const message = { text: "[scenario:default] hi", limits: { maxTurns: 5 } };
  const started = await call(
    "POST",
    `${SESSION}/messages`,
    { sessionId },
    {
      json: message,
      headers: { "idempotency-key": key },
    },
  );
  expect(started.status).toBe(202);
  await api.stage.result({ tenantId: api.tenants.a, sessionId });
  // The same key with another body is refused.
  const reused = await call(
    "POST",
    `${SESSION}/messages`,
    { sessionId },
    {
      json: { ...message, text: "other" },
      headers: { "idempotency-key": key },
    },
  );
  expect(reused.status).toBe(422);
  // Reads.
  await call("GET", SESSION, { sessionId });
  expect((await call("GET", "/v1/sessions", {}, { query: "?limit=5" })).status).toBe(200);
  expect((await call("GET", `${SESSION}/events`, { sessionId }, { query: "?after=0" })).status).toBe(200);
  const stream = await call(
    "GET",
    `${SESSION}/events`,
    { sessionId },
    { headers: { accept: "text/event-stream" } },
  );
  expect(stream.status).toBe(200);
  const entries = await call("GET", `${SESSION}/entries`, { sessionId });
  expect(entries.status).toBe(200);
  const [first, ...rest] = entries.body.entries as { entry: { id: string } }[];
  const leafId = (rest.at(-1) ?? first)?.entry.id as string;
  const exported = await call("GET", `${SESSION}/export`, { sessionId });
  expect(exported.status).toBe(200);
  expect((await call("GET", `${SESSION}/export`, { sessionId }, { query: "?workspace=true" })).status).toBe(
    200,
  );
  // The session viewer: the page (open, holding no session data), its data, the offline export.
  expect((await call("GET", "/view/sessions/{sessionId}", { sessionId }, { key: null })).status).toBe(200);
  expect((await call("GET", `${SESSION}/view`, { sessionId })).status).toBe(200);
  // The workspace diff (a session whose run ran no tool: no changes) and an unknown session's.
  expect((await call("GET", `${SESSION}/diff`, { sessionId })).body.files).toEqual([]);
  expect((await call("GET", `${SESSION}/diff`, { sessionId: api.sessionId() })).status).toBe(404);
  expect((await call("GET", `${SESSION}/export`, { sessionId }, { query: "?format=html" })).status).toBe(200);
  // Schedules: made paused (every day), read, paused and resumed, fired once by hand, deleted.
  const SCHEDULE = "/v1/schedules/{scheduleId}";
  const scheduleId = `conformance-${Date.now()}`;
  const schedule = await call(
    "POST",
    "/v1/schedules",
    {},
    { json: { scheduleId, every: "1d", paused: true, text: "scheduled" } },
  );
  expect(schedule.status).toBe(201);
  expect((await call("GET", "/v1/schedules", {})).status).toBe(200);
  expect((await call("GET", SCHEDULE, { scheduleId })).status).toBe(200);
  expect((await call("POST", `${SCHEDULE}/resume`, { scheduleId }, { json: {} })).status).toBe(200);
  expect((await call("POST", `${SCHEDULE}/pause`, { scheduleId }, { json: {} })).status).toBe(200);
  expect((await call("POST", `${SCHEDULE}/trigger`, { scheduleId }, { json: {} })).status).toBe(202);
  expect((await call("DELETE", SCHEDULE, { scheduleId })).status).toBe(200);
  expect((await call("GET", SCHEDULE, { scheduleId })).status).toBe(404);
  // Evals: one paused at its budget after its first trial (so it is still running when its
  // budget changes and it is cancelled), listed, read, refused once it has ended.
  const EVAL = "/v1/evals/{evalId}";
  const evalStart = await call(
    "POST",
    "/v1/evals",
    {},
    {
      json: {
        suite: {
          cases: [
            { id: "one", prompt: "conformance one" },
            { id: "two", prompt: "conformance two" },
          ],
        },
        models: ["local-chat"],
        concurrency: 1,
        maxCostUsd: 0.000001,
      },
    },
  );
  expect(evalStart.status).toBe(201);
  const evalId = evalStart.body.evalId as string;
  expect((await call("GET", "/v1/evals", {})).status).toBe(200);
  await eventually(async () => {
    const view = await call("GET", EVAL, { evalId });
    return view.body.progress.state === "paused" ? view : undefined;
  });
  expect((await call("POST", `${EVAL}/budget`, { evalId }, { json: { maxCostUsd: 0.000002 } })).status).toBe(
    202,
  );
  expect((await call("POST", `${EVAL}/cancel`, { evalId })).status).toBe(202);
  await eventually(async () => {
    const view = await call("GET", EVAL, { evalId });
    return view.body.progress.state === "cancelled" ? view : undefined;
  });
  expect((await call("POST", `${EVAL}/cancel`, { evalId })).status).toBe(409);
  expect((await call("GET", EVAL, { evalId: "ev0000000000000000" })).status).toBe(404);
  // The MCP tool list the session's run recorded (none here).
  expect((await call("GET", `${SESSION}/mcp-tools`, { sessionId })).status).toBe(200);
  // Runner environments: made, read, a token issued; the runner's side with that token (no call
  // waits, and a call it does not hold is refused); the token revoked, the environment deleted.
  const ENVIRONMENT = "/v1/environments/{name}";
  const name = `conformance-${Date.now()}`;
  expect((await call("POST", "/v1/environments", {}, { json: { name } })).status).toBe(201);
  expect((await call("GET", "/v1/environments", {})).status).toBe(200);
  expect((await call("GET", ENVIRONMENT, { name })).status).toBe(200);
  const issued = await call("POST", `${ENVIRONMENT}/tokens`, { name });
  expect(issued.status).toBe(201);
  const runner = { key: issued.body.token as string };
  expect(
    (
      await call(
        "POST",
        `${ENVIRONMENT}/calls:claim`,
        { name },
        { ...runner, json: { waitSeconds: 0, runs: ["mcp"] } },
      )
    ).status,
  ).toBe(204);
  const callId = "session-x.7";
  const held = { name, callId };
  const claimId = "not-held";
  expect(
    (await call("POST", `${ENVIRONMENT}/calls/{callId}/heartbeat`, held, { ...runner, json: { claimId } }))
      .status,
  ).toBe(404);
  const output = { content: [{ type: "text", text: "x" }], isError: false };
  expect(
    (
      await call("POST", `${ENVIRONMENT}/calls/{callId}/result`, held, {
        ...runner,
        json: { claimId, output },
      })
    ).status,
  ).toBe(404);
  // A session's workspace: none stored yet; a body that is no gzip stream is refused.
  const WORKSPACE = `${ENVIRONMENT}/sessions/{sessionId}/workspace`;
  const ofSession = { name, sessionId: "session-x" };
  expect((await call("GET", WORKSPACE, ofSession, runner)).status).toBe(404);
  expect(
    (
      await call("PUT", WORKSPACE, ofSession, {
        ...runner,
        body: "not gzip",
        headers: { "content-type": "application/gzip" },
      })
    ).status,
  ).toBe(415);
  const tokenId = issued.body.tokenId as string;
  expect((await call("DELETE", `${ENVIRONMENT}/tokens/{tokenId}`, { name, tokenId })).status).toBe(204);
  expect((await call("DELETE", ENVIRONMENT, { name })).status).toBe(204);
  // The session tree.
  const label = await call(
    "POST",
    `${SESSION}/labels`,
    { sessionId },
    { json: { entryId: leafId, label: "x" } },
  );
  expect(label.status).toBe(201);
  expect((await call("POST", `${SESSION}/compact`, { sessionId }, { json: {} })).status).toBe(200);
  const branch = await call(
    "POST",
    `${SESSION}/branch`,
    { sessionId },
    { json: { entryId: first?.entry.id } },
  );
  expect(branch.status).toBe(200);
  const fork = await call("POST", `${SESSION}/fork`, { sessionId }, { json: { entryId: leafId } });
  expect(fork.status).toBe(201);
  const replay = await call(
    "POST",
    `${SESSION}/replay`,
    { sessionId },
    { json: { fromEntryId: first?.entry.id, times: 1 } },
  );
  expect(replay.status).toBe(201);
  await sessionWhere(replay.body.runs[0].sessionId, "idle");
  expect(
    (await call("POST", `${SESSION}/replay`, { sessionId }, { json: { fromEntryId: leafId } })).status,
  ).toBe(422);
  const imported = await call(
    "POST",
    "/v1/sessions/import",
    {},
    {
      body: exported.text,
      headers: { "content-type": "application/x-ndjson" },
    },
  );
  expect(imported.status).toBe(201);
  // A run waiting for an approval: approved, and another one aborted.
  const approval = await waitingForApproval("conformance-approve");
  const approved = await call("POST", `${SESSION}/approvals/{toolCallId}`, approval, {
    json: { decision: "approve" },
  });
  expect(approved.status).toBe(202);
  const waiting = await waitingForApproval("conformance-abort");
  const aborted = await call(
    "POST",
    `${SESSION}/abort`,
    { sessionId: waiting.sessionId },
    { json: { reason: "stop" } },
  );
  expect(aborted.status).toBe(202);
  await sessionWhere(waiting.sessionId, "idle");
  // A run paused at its cost budget: a raise too small leaves it paused, a resume lets it go on.
  const paused = await pausedAtBudget("conformance-budget");
  const small = await call("POST", `${SESSION}/budget`, paused, { json: { maxCostUsd: 0.000_001_1 } });
  expect(small.status).toBe(202);
  expect(small.body).toMatchObject({ answered: true, status: "paused", budget: { maxCostUsd: 0.000_001_1 } });
  const resumed = await call("POST", `${SESSION}/resume`, paused, { json: {} });
  expect(resumed.status).toBe(202);
  expect(resumed.body).toMatchObject({ answered: true, budget: { maxCostUsd: 0 } });
  await sessionWhere(paused.sessionId, "idle");
  // Problems.
  expect((await call("POST", `${SESSION}/abort`, { sessionId }, { json: {} })).status).toBe(409);
  expect((await call("POST", `${SESSION}/budget`, { sessionId }, { json: { maxTokens: 10 } })).status).toBe(
    409,
  );
  expect((await call("POST", `${SESSION}/resume`, { sessionId }, { json: {} })).status).toBe(409);
  expect((await call("POST", `${SESSION}/budget`, { sessionId }, { json: { maxTokens: -1 } })).status).toBe(
    400,
  );
  expect((await call("GET", SESSION, { sessionId: api.sessionId() })).status).toBe(404);
  expect((await call("GET", "/v1/sessions", {}, { query: "?limit=0" })).status).toBe(400);
  expect((await call("GET", SESSION, { sessionId }, { key: null })).status).toBe(401);
  expect((await call("POST", "/v1/integrations/slack/events", {}, { json: {} })).status).toBe(404);
  // And away.
  expect((await call("DELETE", SESSION, { sessionId: fork.body.sessionId })).status).toBe(200);

  const operations = Object.entries(document.paths).flatMap(([template, methods]) =>
    Object.keys(methods).map((method) => `${method} ${template}`),
  );
  expect(operations.filter((operation) => !exercised.has(operation))).toEqual([]);
});

test("the checker refuses what the document does not declare", () => {
  const template = SESSION;
  const answer = (status: number, body: unknown): ApiResponse => ({
    status,
    headers: new Headers({ "content-type": "application/json" }),
    text: JSON.stringify(body),
    body,
  });
  const view = { sessionId: "s", status: "idle", entryCount: 0, leafId: null };
  expect(violations("GET", template, answer(200, view))).toEqual([]);
  expect(violations("GET", template, answer(200, { ...view, extra: 1 }))).toEqual([
    expect.stringContaining("must NOT have unevaluated properties"),
  ]);
  expect(violations("GET", template, answer(418, view))).toEqual([expect.stringContaining("418")]);
});
