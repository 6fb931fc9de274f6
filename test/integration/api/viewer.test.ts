/**
 * The session viewer's routes on the real stack (S3 server, Temporal dev server): the data
 * route is behind the API's own auth and tenant scoping, the page holds no session data, and
 * the offline export carries the session as inert JSON under a policy that allows no fetch.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

let api: ApiStage;
const SECRET_TEXT = "the tenant's private transcript";
const HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>";

beforeAll(async () => {
  api = await createApiStage({ withWorker: false });
});

afterAll(async () => {
  await api?.close();
});

/** Imports the branched fixture with one hostile and one private line added; returns its id. */
async function importSession(): Promise<string> {
  const fixture = readFileSync(join(__dirname, "../../fixtures/sessions/branches-labels.jsonl"), "utf8");
  const extra = [
    { id: "z1", parentId: "a0000016", text: SECRET_TEXT },
    { id: "z2", parentId: "z1", text: HOSTILE },
  ].map(({ id, parentId, text }) =>
    JSON.stringify({
      type: "message",
      id,
      parentId,
      timestamp: "2026-01-05T10:01:00.000Z",
      message: { role: "user", content: [{ type: "text", text }], timestamp: 0 },
    }),
  );
  const imported = await api.call("POST", "/v1/sessions/import", {
    body: `${fixture.trimEnd()}\n${extra.join("\n")}\n`,
    headers: { "content-type": "application/x-ndjson" },
  });
  expect(imported.status).toBe(201);
  return imported.body.sessionId as string;
}

test("the view is the caller's only: 401 without a key, 404 for another tenant", async () => {
  const sessionId = await importSession();
  expectProblem(await api.call("GET", `/v1/sessions/${sessionId}/view`, { key: null }), 401, "unauthorized");
  expectProblem(
    await api.call("GET", `/v1/sessions/${sessionId}/view`, { key: api.keys.b }),
    404,
    "session-not-found",
  );
  expectProblem(
    await api.call("GET", `/v1/sessions/${sessionId}/export?format=html`, { key: api.keys.b }),
    404,
    "session-not-found",
  );

  const view = await api.call("GET", `/v1/sessions/${sessionId}/view`);
  expect(view.status).toBe(200);
  expect(view.headers.get("cache-control")).toBe("no-store");
  expect(view.body).toMatchObject({ sessionId, status: "idle", leafId: "z2" });
  expect(view.body.nodes).toHaveLength(24);
  const branchPoint = view.body.nodes.find((node: { id: string }) => node.id === "a0000006");
  expect(branchPoint).toMatchObject({
    children: ["a0000007", "a000000d"],
    label: "listed",
    onLeafPath: true,
  });
});

test("the page is open but holds nothing of the session, under a hash-only policy", async () => {
  const sessionId = await importSession();
  const page = await api.call("GET", `/view/sessions/${sessionId}`, { key: null });
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(page.text).not.toContain(SECRET_TEXT);
  const policy = page.headers.get("content-security-policy") ?? "";
  expect(policy).toMatch(/default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'; style-src 'sha256-/);
  expect(policy).toContain("connect-src 'self'");
  expect(policy).toContain("frame-ancestors 'none'");
  expect(page.headers.get("x-content-type-options")).toBe("nosniff");
  expect(page.headers.get("referrer-policy")).toBe("no-referrer");
  // A session id that is not one is refused, not echoed into a page.
  expect((await api.call("GET", "/view/sessions/%3Cscript%3E", { key: null })).status).toBe(400);
});

test("the HTML export embeds the session as inert JSON and may connect nowhere", async () => {
  const sessionId = await importSession();
  const exported = await api.call("GET", `/v1/sessions/${sessionId}/export?format=html`);
  expect(exported.status).toBe(200);
  expect(exported.headers.get("content-disposition")).toBe(`attachment; filename="${sessionId}.html"`);
  expect(exported.headers.get("content-security-policy")).toContain("connect-src 'none'");
  expect(exported.text).toContain(SECRET_TEXT);
  expect(exported.text).not.toContain(HOSTILE);
  expect(exported.text).not.toContain("<img");
  // One executable script element: the page's own.
  expect(exported.text.match(/<script>/g)).toHaveLength(1);
});
