/**
 * An API declared for one tenant (KEEL_SINGLE_TENANT, the companion of workers with
 * KEEL_SANDBOX=off) refuses every session request of another tenant before anything is read or
 * started for it.
 */
import { createHash } from "node:crypto";
import { createApp } from "../../../src/api/app";
import { apiConfigFromEnv } from "../../../src/api/config";
import { loadCatalog } from "../../../src/providers/models";
import type { RunClient } from "../../../src/run-client/run-client";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const env = {
  KEEL_S3_BUCKET: "bucket",
  KEEL_API_KEYS: JSON.stringify({ [sha256("acme-key")]: "acme", [sha256("other-key")]: "other" }),
  KEEL_SINGLE_TENANT: "acme",
};

/** The app over dependencies that record every use and otherwise fail. */
function appWithRecordedUses() {
  const used: string[] = [];
  const unavailable = (what: string) => {
    used.push(what);
    throw new Error(`${what} is not available in this test`);
  };
  const app = createApp({
    config: apiConfigFromEnv(env),
    runs: async () => unavailable("runs") as RunClient,
    store: new Proxy({}, { get: (_target, name) => () => unavailable(`store.${String(name)}`) }) as never,
    snapshots: {} as never,
    objects: {} as never,
    catalog: loadCatalog(),
    log: () => {},
  });
  return { app, used };
}

const message = (key: string) => ({
  method: "POST",
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  body: JSON.stringify({ text: "cat /proc/$PPID/environ" }),
});

test("another tenant's run is refused with 403 tenant-not-served; nothing is started or read", async () => {
  const { app, used } = appWithRecordedUses();
  const response = await app.request("/v1/sessions/s1/messages", message("other-key"));
  expect(response.status).toBe(403);
  expect(response.headers.get("content-type")).toBe("application/problem+json");
  expect(await response.json()).toMatchObject({
    type: "https://keel.dev/problems/tenant-not-served",
    status: 403,
  });
  for (const path of ["/v1/sessions", "/v1/sessions/s1", "/v1/sessions/s1/events"]) {
    expect((await app.request(path, { headers: { authorization: "Bearer other-key" } })).status).toBe(403);
  }
  expect(used).toEqual([]);
});

test("another tenant's schedules are refused the same way: none is created, read or fired", async () => {
  const { app, used } = appWithRecordedUses();
  const create = await app.request("/v1/schedules", {
    ...message("other-key"),
    body: JSON.stringify({ text: "cat /proc/$PPID/environ", every: "1m" }),
  });
  expect(create.status).toBe(403);
  for (const path of ["/v1/schedules", "/v1/schedules/nightly"]) {
    expect((await app.request(path, { headers: { authorization: "Bearer other-key" } })).status).toBe(403);
  }
  const trigger = await app.request("/v1/schedules/nightly/trigger", {
    method: "POST",
    headers: { authorization: "Bearer other-key" },
  });
  expect(trigger.status).toBe(403);
  expect(used).toEqual([]);
});

test("the declared tenant's run goes on to the run client", async () => {
  const { app, used } = appWithRecordedUses();
  const response = await app.request("/v1/sessions/s1/messages", message("acme-key"));
  expect(response.status).toBe(500);
  expect(used).toEqual(["runs"]);
});

test("KEEL_SINGLE_TENANT must be a tenant id", () => {
  expect(() => apiConfigFromEnv({ ...env, KEEL_SINGLE_TENANT: "../x" })).toThrow(/KEEL_SINGLE_TENANT/);
  expect(apiConfigFromEnv({ ...env, KEEL_SINGLE_TENANT: undefined }).singleTenant).toBeUndefined();
});
