/**
 * A caller naming a server of its own as a model's base URL, on the real stack. A recording HTTP
 * server stands in for the caller's server. The API refuses the message (400 naming the field
 * and the setting) and the server receives nothing; a run started past the API (the workflow
 * started directly) fails on the worker without a request; a server the operator listed without
 * a key receives the placeholder, never the worker's key; and a listed one-line model still runs.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { type ApiApp, createApp } from "../../../src/api/app";
import { parseModelUrls } from "../../../src/providers/model-urls";
import { loadCatalog } from "../../../src/providers/models";
import { JsonObjects } from "../../../src/store/json-objects";
import { WorkspaceSnapshots } from "../../../src/store/workspace-snapshots";
import { parseGitHosts } from "../../../src/tools/git-source";
import { s3Client, s3Settings } from "../../support/integration-env";
import { type Recorder, startRecorder } from "../../support/recording-server";
import { createRunStage, type RunStage } from "../../support/run-harness";

const API_KEY = "egress-test-key";
let stage: RunStage;
let app: ApiApp;
let attacker: Recorder;
let listed: Recorder;
const s3 = s3Client();

beforeAll(async () => {
  stage = await createRunStage();
  [attacker, listed] = await Promise.all([startRecorder(), startRecorder()]);
  // The worker's own key is "local-key" (run harness); the operator lists the local LLM server
  // and `listed`, without keys.
  await stage.startWorker({ KEEL_MODEL_URLS: `${stage.llm.url},${listed.url}` });
  const settings = s3Settings();
  app = createApp({
    config: {
      apiKeys: { [createHash("sha256").update(API_KEY).digest("hex")]: stage.tenantId },
      bodyLimitBytes: 256 * 1024,
      allowDirectoryWorkspaces: false,
      sseMaxSeconds: 0,
      defaultModel: "local-chat",
      outbound: {
        modelUrls: parseModelUrls(`${stage.llm.url},${listed.url}`),
        providerBaseUrls: {},
        gitHosts: parseGitHosts(undefined),
      },
    },
    runs: async () => stage.runs,
    store: stage.store,
    snapshots: new WorkspaceSnapshots(s3, settings),
    objects: new JsonObjects(s3, settings.bucket, settings.prefix),
    catalog: loadCatalog(),
    log: () => undefined,
  });
});

afterAll(async () => {
  await stage?.close();
  await Promise.all([attacker?.close(), listed?.close()]);
  s3.destroy();
});

async function postMessage(sessionId: string, body: Record<string, unknown>) {
  const response = await app.request(`/v1/sessions/${sessionId}/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ text: "hi", ...body }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

test.each(["openai-compatible", "openai-responses", "anthropic-compatible"])(
  "the API refuses a %s model on a base URL the operator did not list: 400 naming the field and the setting",
  async (kind) => {
    const ref = stage.newSession();
    const { status, body } = await postMessage(ref.sessionId, { model: `${kind}:m@${attacker.url}/v1` });
    expect(status).toBe(400);
    expect(body.type).toBe("https://keel.dev/problems/invalid-request");
    expect(body.detail).toMatch(/^The request does not match the schema \(model: .*KEEL_MODEL_URLS/);
    expect(body.errors).toEqual([{ path: "model", message: expect.stringContaining(attacker.url) }]);
    expect(await stage.runs.state(ref)).toBeUndefined();
    expect(attacker.requests).toEqual([]);
  },
);

test("the API refuses a git source on a host the operator did not list, and a non-https one", async () => {
  for (const url of ["https://evil.example/repo.git", "ssh://github.com/keel/repo.git", "ext::sh -c id"]) {
    const { status, body } = await postMessage(stage.newSession().sessionId, {
      workspace: { type: "git", url },
    });
    expect(status).toBe(400);
    expect(body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path: "workspace.url" })]));
  }
});

test("the API refuses an MCP server naming a tenant secret where the deployment has no vault", async () => {
  const { status, body } = await postMessage(stage.newSession().sessionId, {
    mcpServers: [{ name: "leak", command: "node", env: { K: { secret: "OPENAI_API_KEY" } } }],
  });
  expect(status).toBe(422);
  expect(body.errors).toEqual([
    {
      path: "mcpServers",
      message: "names tenant secrets, and this deployment has no vault configured (docs/deploy.md)",
    },
  ]);
  expect(body.detail).toContain("no vault configured");
});

test("a one-line model on a listed URL runs through the API", async () => {
  const ref = stage.newSession();
  const { status } = await postMessage(ref.sessionId, { model: `openai-compatible:served@${stage.llm.url}` });
  expect(status).toBe(202);
  expect((await stage.result(ref)).status).toBe("completed");
});

test("a run started past the API fails on the worker without a request to the caller's server", async () => {
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "hi", mode: "auto" },
    stage.settings({ model: `openai-compatible:m@${attacker.url}/v1` }),
  );
  const result = await stage.result(ref);
  expect(result.status).toBe("failed");
  expect(result.reason).toMatch(/KEEL_MODEL_URLS/);
  expect(attacker.requests).toEqual([]);
});

test("a listed server that is not the configured one receives the placeholder, never the worker's key", async () => {
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "hi", mode: "auto" },
    stage.settings({ model: `anthropic-compatible:m@${listed.url}` }),
  );
  expect((await stage.result(ref)).status).toBe("failed");
  expect(listed.requests.length).toBeGreaterThan(0);
  for (const headers of listed.requests) {
    expect(JSON.stringify(headers)).not.toContain("local-key");
    expect(JSON.stringify(headers)).toContain("not-needed");
  }
});

test("a git source past the API is refused on the worker before git runs", async () => {
  const marker = `/tmp/keel-egress-${Date.now()}`;
  // The workspace is made at the first tool call.
  stage.llm.addScenario("git-source", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "ls" } }] }, { text: "done" }],
  });
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "[scenario:git-source] go", mode: "auto" },
    stage.settings({ workspace: { type: "git", url: `ext::sh -c touch% ${marker}` } }),
  );
  const result = await stage.result(ref);
  expect(result.status).toBe("failed");
  expect(result.reason).toMatch(/WorkspaceSourceRefused: .*must be https:\/\/ URLs/);
  expect(existsSync(marker)).toBe(false);
});
