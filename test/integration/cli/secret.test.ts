/**
 * `keel secret set|list|delete` as subprocesses against the Node API built from its environment
 * with KEEL_VAULT_KEY_FILE: the value comes from standard input only and is never printed; a
 * rotation bumps the version; delete, then 404 with its hint; without a vault, the 503 names the
 * settings at once (no retries). `keel webhook` against the same API: add prints the signing
 * secret once, list, test, deliveries, rotate, delete (docs/integrations.md, "Webhooks").
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { uniqueName } from "../../support/integration-env";
import { createRunStage, type RunStage } from "../../support/run-harness";
import { type CliApi, runKeel, startCliApi } from "./keel-process";

const KEY = `key-${uniqueName("k")}`;
let stage: RunStage;
let api: CliApi;
let bare: CliApi;
let dir: string;

beforeAll(async () => {
  stage = await createRunStage();
  dir = mkdtempSync(path.join(tmpdir(), "keel-secret-cli-"));
  const keyFile = path.join(dir, "vault.key");
  writeFileSync(keyFile, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600 });
  api = await startCliApi(
    stage,
    { [KEY]: stage.tenantId },
    { KEEL_VAULT_KEY_FILE: keyFile, KEEL_WEBHOOK_HOSTS: "hooks.keel.test" },
  );
  bare = await startCliApi(stage, { [KEY]: stage.tenantId });
});

afterAll(async () => {
  await api?.close();
  await bare?.close();
  await stage?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Several `keel` processes (tsx each) on a shared 2-core machine.
jest.setTimeout(180_000);

const keel = (args: string[], stdin?: string, url = api.url) =>
  runKeel(["secret", ...args], { KEEL_API_URL: url, KEEL_API_KEY: KEY }, stdin);

test("set from standard input, rotate, list, delete; the value is never printed", async () => {
  const first = `ghp_${randomBytes(12).toString("hex")}`;
  const created = await keel(
    ["set", "GITHUB_TOKEN", "--host", "api.github.com", "--host", "github.com"],
    `${first}\n`,
  );
  expect(created).toMatchObject({ code: 0, stderr: "" });
  expect(created.stdout).toMatch(
    /^created GITHUB_TOKEN {2}v1 {2}hosts api\.github\.com,github\.com {2}in header,basic-auth/,
  );

  const second = `ghp_${randomBytes(12).toString("hex")}`;
  const rotated = await keel(
    ["set", "GITHUB_TOKEN", "--host", "github.com", "--in", "basic-auth", "--json"],
    second,
  );
  expect(rotated.code).toBe(0);
  expect(JSON.parse(rotated.stdout)).toMatchObject({
    name: "GITHUB_TOKEN",
    version: 2,
    in: ["basic-auth"],
    created: false,
  });

  const listed = await keel(["list"]);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toMatch(/^GITHUB_TOKEN {2}v2 {2}hosts github\.com {2}in basic-auth/);

  // A value on the command line is no option: it is refused as a usage error.
  const inArgv = await keel(["set", "GITHUB_TOKEN", first, "--host", "github.com"]);
  expect(inArgv.code).toBe(2);
  expect((await keel(["set", "GITHUB_TOKEN"], "v")).code).toBe(2);
  const badHost = await keel(["set", "GITHUB_TOKEN", "--host", "localhost"], second);
  expect(badHost.code).toBe(2);
  expect(badHost.stderr).toMatch(/hosts.0: a host name/);
  expect((await keel(["set", "GITHUB_TOKEN", "--host", "github.com"], "")).code).toBe(2);

  expect(await keel(["delete", "GITHUB_TOKEN"])).toMatchObject({
    code: 0,
    stdout: "deleted secret GITHUB_TOKEN\n",
  });
  const again = await keel(["delete", "GITHUB_TOKEN"]);
  expect(again.code).toBe(3);
  expect(again.stderr).toMatch(/keel secret list/);
  expect((await keel(["list"])).stdout).toBe("no secrets\n");

  for (const result of [created, rotated, listed, inArgv, badHost]) {
    expect(result.stdout + result.stderr).not.toContain(second);
    if (result !== inArgv) expect(result.stdout + result.stderr).not.toContain(first);
  }
});

test("without a vault the API's 503 names the settings at once", async () => {
  const started = Date.now();
  const refused = await keel(["list"], undefined, bare.url);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/KEEL_VAULT_KEY_FILE/);
  // Not retried after Retry-After: a configuration does not change between attempts.
  expect(Date.now() - started).toBeLessThan(30_000);
});

test("keel webhook: add prints the secret once; list, test, deliveries, rotate, delete", async () => {
  const webhook = (args: string[]) =>
    runKeel(["webhook", ...args], { KEEL_API_URL: api.url, KEEL_API_KEY: KEY });
  const added = await webhook(["add", "https://hooks.keel.test/keel", "--event", "run.completed", "--json"]);
  expect(added.code).toBe(0);
  const endpoint = JSON.parse(added.stdout) as { id: string; secret: string };
  expect(endpoint.secret).toMatch(/^whsec_/);
  const refused = await webhook(["add", "https://127.0.0.1/x", "--event", "run.completed"]);
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain("does not resolve to an address that is public");
  expect((await webhook(["add", "https://hooks.keel.test/x", "--event", "run.nope"])).code).toBe(2);

  const listed = await webhook(["list"]);
  expect(listed.stdout).toContain(`${endpoint.id}  https://hooks.keel.test/keel  run.completed`);
  expect(listed.stdout).not.toContain(endpoint.secret);
  const sent = await webhook(["test", endpoint.id]);
  expect(sent.stdout).toMatch(/^sent webhook\.test evt_/);
  // No worker runs here: the delivery waits in Temporal, recorded pending.
  expect((await webhook(["deliveries", endpoint.id])).stdout).toMatch(
    /webhook\.test {2}webhook-test {2}pending {2}0 attempt/,
  );
  const rotated = await webhook(["rotate", endpoint.id, "--overlap", "60"]);
  expect(rotated.stdout).toMatch(/old secret until .*\nnew signing secret \(shown only now\): whsec_/);
  expect(rotated.stdout).not.toContain(endpoint.secret);
  expect((await webhook(["delete", endpoint.id])).stdout).toBe(`deleted webhook endpoint ${endpoint.id}\n`);
  const gone = await webhook(["delete", endpoint.id]);
  expect(gone.code).toBe(3);
  expect(gone.stderr).toMatch(/keel webhook list/);
});
