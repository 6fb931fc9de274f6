/**
 * Tenant secrets on a runner environment: the API's claim of a bash call in a run naming secrets
 * carries them, resolved for that call, to a runner that says it runs them; the runner's sandbox
 * sees the placeholder, never the value, which is in no stored entry and no line the runner
 * printed. A runner of an earlier release (its claim says only `runs: ["mcp"]`) is handed no such
 * call: the call gets an error result saying why, instead of running without its secrets.
 */
import { randomBytes } from "node:crypto";
import { EnvironmentStore } from "../../../src/environments/store";
import { SecretStore } from "../../../src/tenants/secrets";
import { LocalKeyWrapper } from "../../../src/vault/key-wrapper";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";
import { eventually, expectIntactSession, messagesOf } from "../../support/run-harness";
import type { ApiStage } from "../api/api-stage";
import { type RunnerStage, useRunnerStage, workspaceRoot } from "./runner-stage";

const s3 = s3Client();
const vault = new SecretStore(s3, s3Settings(), new LocalKeyWrapper(randomBytes(32)));
const value = `tok_${randomBytes(16).toString("hex")}`;
let stage: RunnerStage;
let api: ApiStage;

useRunnerStage(
  (created) => {
    stage = created;
    api = created.api;
  },
  { overrides: { vault } },
);
afterAll(() => s3.destroy());

jest.setTimeout(120_000);

/** A run on `environment` naming the secret, whose model makes one bash call. */
async function runNamingSecret(environment: string, command: string) {
  await vault.set(api.tenants.a, { name: "DEPLOY_TOKEN", hosts: ["api.example.com"], in: ["header"] }, value);
  const scenario = uniqueName("runner-secret");
  api.stage.llm.addScenario(scenario, {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command } }] }],
    after: { text: "done" },
  });
  const ref = api.stage.newSession();
  await api.stage.runs.deliver(
    ref,
    { text: `[scenario:${scenario}] go`, mode: "auto" },
    api.stage.settings({ environment, secrets: ["DEPLOY_TOKEN"] }),
  );
  return ref;
}

function toolText(entries: Awaited<ReturnType<typeof api.stage.entries>>): string {
  const result = messagesOf(entries).find((message) => message.role === "toolResult");
  return result?.role === "toolResult"
    ? result.content.map((block) => (block.type === "text" ? block.text : "")).join("")
    : "";
}

test("a runner runs a bash call with the run's secret: its sandbox holds the placeholder, the value is nowhere", async () => {
  const env = await stage.newEnvironment();
  const runner = stage.startRunner(env.name, env.token, ["--workspace-root", workspaceRoot()]);
  const ref = await runNamingSecret(
    env.name,
    "env | grep ^DEPLOY_TOKEN=; cat /proc/self/environ | tr '\\000' '\\n' | grep -c ^DEPLOY_TOKEN=keel-placeholder-",
  );
  expect((await api.stage.result(ref)).status).toBe("completed");
  const entries = await expectIntactSession(api.stage, ref);
  const text = toolText(entries);
  expect(text).toMatch(/^DEPLOY_TOKEN=keel-placeholder-DEPLOY_TOKEN-[0-9a-f]{32}\n1/);
  expect(JSON.stringify(entries)).not.toContain(value);
  expect(runner.output()).toContain("call done");
  expect(runner.output()).not.toContain(value);
});

test("a claim says what it runs: the call's secrets go only to a runner that runs them; an earlier runner's call gets an error result", async () => {
  const env = await stage.newEnvironment();
  const ref = await runNamingSecret(env.name, "echo should-not-run");
  // Claimed by hand as a runner of an earlier release claims (no "secrets"): nothing is handed over.
  await eventually(async () => {
    const answer = await api.call("POST", `/v1/environments/${env.name}/calls:claim`, {
      key: env.token,
      json: { waitSeconds: 1, runs: ["mcp"] },
    });
    expect(answer.status).toBe(204);
    const state = await api.stage.runs.state(ref);
    return state?.status !== "running" || (await api.stage.entries(ref)).length > 2 ? true : undefined;
  });
  expect((await api.stage.result(ref)).status).toBe("completed");
  const text = toolText(await expectIntactSession(api.stage, ref));
  expect(text).toContain("does not say it runs calls with secrets");
  expect(text).not.toContain("should-not-run");

  // A claim that says it runs them gets the call's secret, values included, for that call only.
  const second = await runNamingSecret(env.name, "true");
  const claimed = await eventually(async () => {
    const answer = await api.call("POST", `/v1/environments/${env.name}/calls:claim`, {
      key: env.token,
      json: { waitSeconds: 1, runs: ["mcp", "secrets"] },
    });
    return answer.status === 200 ? answer.body : undefined;
  });
  expect(claimed.secrets).toEqual([
    { name: "DEPLOY_TOKEN", hosts: ["api.example.com"], in: ["header"], value },
  ]);
  expect(claimed.missingSecrets).toEqual([]);
  // The claim's record in S3 holds no value.
  const settings = s3Settings();
  const record = await new EnvironmentStore(s3, settings.bucket, settings.prefix).readCall(
    api.tenants.a,
    env.name,
    claimed.callId,
  );
  expect(record).toBeDefined();
  expect(JSON.stringify(record)).not.toContain(value);
  const posted = await api.call("POST", `/v1/environments/${env.name}/calls/${claimed.callId}/result`, {
    key: env.token,
    json: { claimId: claimed.claimId, output: { content: [{ type: "text", text: "ok" }], isError: false } },
  });
  expect(posted.status).toBe(200);
  expect((await api.stage.result(second)).status).toBe("completed");
});
