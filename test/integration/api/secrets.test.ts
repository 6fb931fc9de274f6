/**
 * The secrets routes on the test S3 server: create (201), rotate (200), list and read metadata,
 * delete (204, then 404); no response, listing, refusal or log line ever carries a value; each
 * tenant sees only its own namespace; names, values and hosts are checked (400); without a vault
 * the routes answer 503 naming the settings.
 */
import { randomBytes } from "node:crypto";
import { SecretStore } from "../../../src/tenants/secrets";
import { LocalKeyWrapper } from "../../../src/vault/key-wrapper";
import { s3Client, s3Settings } from "../../support/integration-env";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;
const logged: string[] = [];
const s3 = s3Client();
const vault = new SecretStore(s3, s3Settings(), new LocalKeyWrapper(randomBytes(32)));
/** Every answer of the test, to check none carries a value. */
const answers: string[] = [];

beforeAll(async () => {
  api = await createApiStage({
    withWorker: false,
    overrides: { vault, log: (record) => logged.push(JSON.stringify(record)) },
  });
});

afterAll(async () => {
  await api?.close();
  s3.destroy();
});

const value = () => `tok_${randomBytes(12).toString("hex")}`;

async function call(...args: Parameters<ApiStage["call"]>) {
  const response = await api.call(...args);
  answers.push(response.text);
  return response;
}

test("create, rotate, read, list and delete; only metadata is answered", async () => {
  const first = value();
  const created = await call("PUT", "/v1/secrets/GITHUB_TOKEN", {
    json: { value: first, hosts: ["API.github.com", "api.github.com"] },
  });
  expect(created.status).toBe(201);
  expect(created.body).toEqual({
    name: "GITHUB_TOKEN",
    hosts: ["api.github.com"],
    in: ["header", "basic-auth"],
    createdAt: expect.any(String),
    updatedAt: expect.any(String),
    version: 1,
  });

  const second = value();
  const rotated = await call("PUT", "/v1/secrets/GITHUB_TOKEN", {
    json: { value: second, hosts: ["github.com", "*.github.com:8443"], in: ["basic-auth"] },
  });
  expect(rotated.status).toBe(200);
  expect(rotated.body).toMatchObject({
    version: 2,
    hosts: ["github.com", "*.github.com:8443"],
    in: ["basic-auth"],
    createdAt: created.body.createdAt,
  });
  expect((await vault.resolve(api.tenants.a, ["GITHUB_TOKEN"])).secrets[0]?.value).toBe(second);

  const one = await call("GET", "/v1/secrets/GITHUB_TOKEN");
  expect(one.status).toBe(200);
  expect(one.body).toEqual(rotated.body);
  await call("PUT", "/v1/secrets/NPM_TOKEN", { json: { value: value(), hosts: ["registry.npmjs.org"] } });
  const listed = await call("GET", "/v1/secrets");
  expect(listed.status).toBe(200);
  expect(listed.body.secrets.map((secret: { name: string }) => secret.name)).toEqual([
    "GITHUB_TOKEN",
    "NPM_TOKEN",
  ]);

  const deleted = await call("DELETE", "/v1/secrets/GITHUB_TOKEN");
  expect(deleted.status).toBe(204);
  expect(deleted.text).toBe("");
  expectProblem(await call("DELETE", "/v1/secrets/GITHUB_TOKEN"), 404, "secret-not-found");
  expectProblem(await call("GET", "/v1/secrets/GITHUB_TOKEN"), 404, "secret-not-found");
  expect(await vault.resolve(api.tenants.a, ["GITHUB_TOKEN"])).toEqual({
    secrets: [],
    missing: ["GITHUB_TOKEN"],
  });

  for (const text of [...answers, ...logged]) {
    expect(text).not.toContain(first);
    expect(text).not.toContain(second);
  }
});

test("another tenant cannot read, delete or overwrite a tenant's secret: each has its own namespace", async () => {
  const ofA = value();
  expect(
    (await call("PUT", "/v1/secrets/SHARED_NAME", { json: { value: ofA, hosts: ["a.example.com"] } })).status,
  ).toBe(201);
  const asB = { key: api.keys.b };
  expectProblem(await call("GET", "/v1/secrets/SHARED_NAME", asB), 404, "secret-not-found");
  expect((await call("GET", "/v1/secrets", asB)).body).toEqual({ secrets: [] });
  expectProblem(await call("DELETE", "/v1/secrets/SHARED_NAME", asB), 404, "secret-not-found");
  // B's PUT of the same name creates B's own secret (version 1), A's stays as it was.
  const ofB = value();
  const putByB = await call("PUT", "/v1/secrets/SHARED_NAME", {
    ...asB,
    json: { value: ofB, hosts: ["b.example.com"] },
  });
  expect(putByB.status).toBe(201);
  expect(putByB.body).toMatchObject({ version: 1, hosts: ["b.example.com"] });
  expect((await vault.resolve(api.tenants.a, ["SHARED_NAME"])).secrets).toEqual([
    { name: "SHARED_NAME", hosts: ["a.example.com"], in: ["header", "basic-auth"], value: ofA },
  ]);
  expect((await vault.resolve(api.tenants.b, ["SHARED_NAME"])).secrets[0]?.value).toBe(ofB);
  expectProblem(await call("GET", "/v1/secrets", { key: null }), 401, "unauthorized");
  expectProblem(
    await call("PUT", "/v1/secrets/X_TOKEN", {
      key: null,
      json: { value: value(), hosts: ["a.example.com"] },
    }),
    401,
    "unauthorized",
  );
});

test("bad names, values, hosts and bodies are refused with 400, never quoting the value", async () => {
  const secretValue = value();
  const put = (name: string, body: unknown) => call("PUT", `/v1/secrets/${name}`, { json: body });
  const refusals: [string, unknown, RegExp][] = [
    ["lower", { value: secretValue, hosts: ["a.example.com"] }, /upper-case/],
    ["PATH", { value: secretValue, hosts: ["a.example.com"] }, /sandbox does not set/],
    ["KEEL_X", { value: secretValue, hosts: ["a.example.com"] }, /sandbox does not set/],
    ["OK_NAME", { value: "", hosts: ["a.example.com"] }, /^The request .*value: /],
    ["OK_NAME", { value: `${secretValue}\r\nX-Evil: 1`, hosts: ["a.example.com"] }, /line breaks/],
    [
      "OK_NAME",
      { value: `${secretValue}${"x".repeat(16 * 1024)}`, hosts: ["a.example.com"] },
      /value: Too big/,
    ],
    ["OK_NAME", { value: "é".repeat(9000), hosts: ["a.example.com"] }, /at most 16384 bytes/],
    ["OK_NAME", { value: secretValue, hosts: [] }, /hosts/],
    ["OK_NAME", { value: secretValue, hosts: ["localhost"] }, /hosts\.0: a host name/],
    ["OK_NAME", { value: secretValue, hosts: ["a.example.com", "10.0.0.1"] }, /hosts\.1/],
    [
      "OK_NAME",
      { value: secretValue, hosts: ["https://a.example.com/"] },
      /hosts\.0: .*not an address or a URL/,
    ],
    [
      "OK_NAME",
      { value: secretValue, hosts: Array.from({ length: 11 }, (_, i) => `h${i}.example.com`) },
      /hosts/,
    ],
    ["OK_NAME", { value: secretValue, hosts: ["a.example.com"], in: ["body"] }, /in\.0/],
    ["OK_NAME", { value: secretValue, hosts: ["a.example.com"], in: [] }, /in/],
    ["OK_NAME", { value: secretValue, hosts: ["a.example.com"], extra: 1 }, /extra/],
    ["OK_NAME", { hosts: ["a.example.com"] }, /value/],
  ];
  for (const [name, body, detail] of refusals) {
    const refused = await put(name, body);
    expectProblem(refused, 400, "invalid-request");
    expect(refused.body.detail).toMatch(detail);
    expect(refused.text).not.toContain(secretValue);
  }
  const malformed = await call("PUT", "/v1/secrets/OK_NAME", {
    body: `{"value": "${secretValue}", `,
    headers: { "content-type": "application/json" },
  });
  expect(malformed.status).toBe(400);
  expect(malformed.text).not.toContain(secretValue);
  expectProblem(await call("GET", "/v1/secrets/lower"), 400, "invalid-request");
  expectProblem(await call("DELETE", "/v1/secrets/lower"), 400, "invalid-request");
  expectProblem(await call("GET", "/v1/secrets/OK_NAME"), 404, "secret-not-found");
  for (const line of logged) expect(line).not.toContain(secretValue);
});

test("a failing vault answers 500 and logs no value", async () => {
  const secretValue = value();
  const broken = new SecretStore(s3, s3Settings(), {
    kind: "local-file",
    newDataKey: async () => {
      throw new Error("the key service refused");
    },
    unwrap: async () => {
      throw new Error("the key service refused");
    },
  });
  const response = await api.callerWith({
    vault: broken,
    log: (record) => logged.push(JSON.stringify(record)),
  })("PUT", "/v1/secrets/BROKEN", { json: { value: secretValue, hosts: ["a.example.com"] } });
  expectProblem(response, 500, "internal-error");
  expect(response.text).not.toContain(secretValue);
  expect(logged.some((line) => line.includes("the key service refused"))).toBe(true);
  for (const line of logged) expect(line).not.toContain(secretValue);
});

test("without a vault the routes answer 503 naming the settings", async () => {
  const unconfigured = api.callerWith({ vault: undefined });
  for (const [method, path] of [
    ["GET", "/v1/secrets"],
    ["GET", "/v1/secrets/A_NAME"],
    ["DELETE", "/v1/secrets/A_NAME"],
  ] as const) {
    const response = await unconfigured(method, path);
    expectProblem(response, 503, "vault-not-configured");
    expect(response.body.detail).toMatch(/KEEL_VAULT_KEY_FILE or KEEL_VAULT_KMS_KEY_ID/);
  }
  const put = await unconfigured("PUT", "/v1/secrets/A_NAME", {
    json: { value: "v", hosts: ["a.example.com"] },
  });
  expectProblem(put, 503, "vault-not-configured");
});

test("the OpenAPI document has the routes", async () => {
  const document = (await call("GET", "/v1/openapi.json", { key: null })).body;
  expect(Object.keys(document.paths["/v1/secrets/{name}"]).sort()).toEqual(["delete", "get", "put"]);
  expect(Object.keys(document.paths["/v1/secrets"])).toEqual(["get"]);
});
