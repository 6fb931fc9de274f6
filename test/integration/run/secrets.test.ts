/**
 * Tenant secrets through a run (docs/tools.md, "Secrets"), on the API and a worker that share a
 * vault: a run naming a secret gets a placeholder in its bash call's environment and /proc, never
 * the value; the value is in no stored session entry, export, event, Temporal history, worker log
 * line or exported span. The API refuses (422) a name the tenant does not have (another tenant's
 * included), secrets with network "full", and any secret where it has no vault. A deleted secret's
 * next call ends with the notice that it is not set.
 */
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { runWorkflowId } from "../../../src/contracts/runs";
import { SecretStore } from "../../../src/tenants/secrets";
import { LocalKeyWrapper } from "../../../src/vault/key-wrapper";
import { s3Client, s3Settings, testTmpDir, uniqueName } from "../../support/integration-env";
import { expectIntactSession, messagesOf, type WorkerProcess } from "../../support/run-harness";
import { type ApiStage, createApiStage, expectProblem } from "../api/api-stage";

const s3 = s3Client();
const key = randomBytes(32);
const vault = new SecretStore(s3, s3Settings(), new LocalKeyWrapper(key));
const value = `tok_${randomBytes(16).toString("hex")}`;
let api: ApiStage;
let worker: WorkerProcess;
/** What the worker's telemetry exported (OTLP over HTTP, JSON): every request body. */
const exported: string[] = [];
let otlp: Server;

beforeAll(async () => {
  otlp = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      exported.push(Buffer.concat(chunks).toString("latin1"));
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((listening) => otlp.listen(0, "127.0.0.1", listening));
  const keyFile = join(testTmpDir(), `${uniqueName("vault")}.key`);
  writeFileSync(keyFile, key.toString("base64"), { mode: 0o600 });
  api = await createApiStage({
    withWorker: false,
    overrides: { vault },
    // Tenant A may ask for network "full": its refusal with secrets is then the secrets' own.
    config: (stage) => ({ fullNetwork: { tenants: [stage.tenantId] } }),
  });
  worker = await api.stage.startWorker({
    KEEL_VAULT_KEY_FILE: keyFile,
    KEEL_OTEL_ENDPOINT: `http://127.0.0.1:${(otlp.address() as AddressInfo).port}`,
    KEEL_OTEL_METRICS_INTERVAL_MS: "1000",
  });
  await vault.set(api.tenants.a, { name: "DEPLOY_TOKEN", hosts: ["api.example.com"], in: ["header"] }, value);
});

afterAll(async () => {
  await api?.close();
  await new Promise<void>((closed) => otlp?.close(() => closed()));
  s3.destroy();
});

/** Starts a run through the API whose model makes one bash call; the message's other fields as given. */
async function runBash(command: string, fields: Record<string, unknown>) {
  const scenario = uniqueName("secret-bash");
  api.stage.llm.addScenario(scenario, {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command } }] }],
    after: { text: "done" },
  });
  const sessionId = api.sessionId();
  const response = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: { text: `[scenario:${scenario}] go`, ...fields },
  });
  return { ref: { tenantId: api.tenants.a, sessionId }, response };
}

function toolResultText(entries: Parameters<typeof messagesOf>[0]): string {
  const result = messagesOf(entries).find((message) => message.role === "toolResult");
  return result?.role === "toolResult"
    ? result.content.map((block) => (block.type === "text" ? block.text : "")).join("")
    : "";
}

test("a bash call of a run naming a secret sees its placeholder in env and /proc, never the value; the value is stored nowhere", async () => {
  const { ref, response } = await runBash(
    "env | grep ^DEPLOY_TOKEN= | sed 's/^/env: /'; cat /proc/self/environ | tr '\\000' '\\n' | grep ^DEPLOY_TOKEN= | sed 's/^/proc: /'",
    { secrets: ["DEPLOY_TOKEN"] },
  );
  expect(response.status).toBe(202);
  expect((await api.stage.result(ref)).status).toBe("completed");
  const entries = await expectIntactSession(api.stage, ref);
  const text = toolResultText(entries);
  expect(text).toMatch(/env: DEPLOY_TOKEN=keel-placeholder-DEPLOY_TOKEN-[0-9a-f]{32}\n/);
  expect(text).toMatch(/proc: DEPLOY_TOKEN=keel-placeholder-DEPLOY_TOKEN-[0-9a-f]{32}/);
  expect(JSON.stringify(entries)).not.toContain(value);

  const exportedSession = await api.call("GET", `/v1/sessions/${ref.sessionId}/export`);
  expect(exportedSession.status).toBe(200);
  expect(exportedSession.text).toContain("keel-placeholder-DEPLOY_TOKEN-");
  expect(exportedSession.text).not.toContain(value);

  const events = await api.call("GET", `/v1/sessions/${ref.sessionId}/events`);
  expect(events.status).toBe(200);
  expect(events.text).toContain("tool_execution_end");
  expect(events.text).not.toContain(value);

  // Names only in the run's history: its settings and the call's activity input (payloads decoded).
  const raw = JSON.stringify(await api.stage.client.workflow.getHandle(runWorkflowId(ref)).fetchHistory());
  const payloads = [...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)]
    .map((match) => Buffer.from(match[1] ?? "", "base64").toString("latin1"))
    .join("\n");
  expect(payloads.includes('"secrets":["DEPLOY_TOKEN"]')).toBe(true);
  expect(payloads.includes(value) || raw.includes(value)).toBe(false);
});

test("the API refuses names the tenant does not have (another tenant's too), secrets with network full, and secrets without a vault", async () => {
  const otherTenant = await api.call("POST", `/v1/sessions/${api.sessionId()}/messages`, {
    key: api.keys.b,
    json: { text: "hi", secrets: ["DEPLOY_TOKEN"] },
  });
  expectProblem(otherTenant, 422, "unusable-secrets");
  expect(otherTenant.body.detail).toContain("names secrets the tenant does not have: DEPLOY_TOKEN");
  expect(otherTenant.text).not.toContain(value);

  const unknown = await runBash("true", { secrets: ["DEPLOY_TOKEN", "NOT_STORED"] });
  expectProblem(unknown.response, 422, "unusable-secrets");
  expect(unknown.response.body.errors).toEqual([
    {
      path: "secrets",
      message: "names secrets the tenant does not have: NOT_STORED (keel secret set NAME --host HOST)",
    },
  ]);

  const invalid = await runBash("true", { secrets: ["lower_case"] });
  expectProblem(invalid.response, 400, "invalid-request");

  const full = await runBash("true", { secrets: ["DEPLOY_TOKEN"], network: "full" });
  expectProblem(full.response, 422, "unusable-secrets");
  expect(full.response.body.detail).toContain('network "full"');
  // Network "full" alone is this tenant's to ask for.
  const fullAlone = await runBash("true", { network: "full" });
  expect(fullAlone.response.status).toBe(202);
  await api.stage.result(fullAlone.ref);

  const noVault = await api.callerWith({ vault: undefined })(
    "POST",
    `/v1/sessions/${api.sessionId()}/messages`,
    { json: { text: "hi", secrets: ["DEPLOY_TOKEN"] } },
  );
  expectProblem(noVault, 422, "unusable-secrets");
  expect(noVault.body.detail).toContain("no vault configured");

  // An MCP server's {secret} is one of the tenant's too.
  const mcp = await runBash("true", {
    mcpServers: [{ name: "tracker", command: "node", env: { TOKEN: { secret: "NOT_STORED" } } }],
  });
  expectProblem(mcp.response, 422, "unusable-secrets");
  expect(mcp.response.body.errors).toEqual([
    {
      path: "mcpServers",
      message: "names secrets the tenant does not have: NOT_STORED (keel secret set NAME --host HOST)",
    },
  ]);
});

test("a secret deleted after the run was accepted: the next call's variable stands for nothing and its output says so", async () => {
  const name = "SHORT_LIVED";
  await vault.set(api.tenants.a, { name, hosts: ["api.example.com"], in: ["header"] }, value);
  const scenario = uniqueName("deleted");
  api.stage.llm.addScenario(scenario, {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: `echo "var=$${name}"` } }] }],
    after: { text: "done" },
  });
  const sessionId = api.sessionId();
  const ref = { tenantId: api.tenants.a, sessionId };
  // Accepted while the tenant has it; deleted before the worker runs the call (the run waits
  // for an approval of the call in between).
  const response = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: {
      text: `[scenario:${scenario}] go`,
      secrets: [name],
      policy: { rules: [{ tool: "bash", action: "ask" }], default: "allow" },
    },
  });
  expect(response.status).toBe(202);
  await api.untilWaitingForApproval(ref);
  expect(await vault.delete(api.tenants.a, name)).toBe(true);
  const state = await api.stage.runs.state(ref);
  const pending = state?.pendingToolCalls?.[0];
  expect(pending).toBeDefined();
  const approved = await api.call("POST", `/v1/sessions/${sessionId}/approvals/${pending?.toolCallId}`, {
    json: { decision: "approve" },
    headers: { "idempotency-key": uniqueName("approve") },
  });
  expect(approved.status).toBeLessThan(300);
  expect((await api.stage.result(ref)).status).toBe("completed");
  const text = toolResultText(await expectIntactSession(api.stage, ref));
  expect(text).toMatch(new RegExp(`var=keel-placeholder-${name}-[0-9a-f]{32}`));
  expect(text.trimEnd().endsWith(`[secrets: ${name} is not set for this tenant]`)).toBe(true);
});

test("no worker log line and no exported span or metric carries the value", async () => {
  // Stopping the worker flushes its telemetry.
  await api.stage.stopWorkers();
  expect(worker.output()).toContain("worker started");
  expect(worker.output()).not.toContain(value);
  expect(exported.length).toBeGreaterThan(0);
  expect(exported.join("\n")).toContain("execute_tool");
  expect(exported.join("\n")).not.toContain(value);
});
