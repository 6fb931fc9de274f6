/**
 * `keel admin` and `keel usage` as subprocesses against a live API built from its environment
 * (KEEL_ADMIN_KEY_SHA256, the tenant store in S3): a tenant and a key made from the command line
 * work for that tenant, settings round-trip, a tenant key is refused as the operator's, and a
 * revoked key stops working.
 */
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { uniqueName } from "../../support/integration-env";
import { createRunStage, eventually, type RunStage } from "../../support/run-harness";
import { type CliApi, runKeel, startCliApi } from "./keel-process";

const ADMIN_KEY = `admin-${uniqueName("k")}`;
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

let stage: RunStage;
let api: CliApi;

beforeAll(async () => {
  stage = await createRunStage();
  api = await startCliApi(
    stage,
    { [`static-${uniqueName("k")}`]: stage.tenantId },
    {
      KEEL_ADMIN_KEY_SHA256: sha256(ADMIN_KEY),
    },
  );
});

afterAll(async () => {
  await api?.close();
  await stage?.close();
});

// Several `keel` processes (tsx each) on a shared 2-core machine.
jest.setTimeout(180_000);

const asOperator = (args: string[], key = ADMIN_KEY) =>
  runKeel(["admin", ...args], { KEEL_API_URL: api.url, KEEL_ADMIN_KEY: key });
const asTenant = (args: string[], key: string) => runKeel(args, { KEEL_API_URL: api.url, KEEL_API_KEY: key });

test("tenant, key, settings and usage from the command line; a revoked key stops working", async () => {
  const tenantId = uniqueName("cli-tenant");
  expect(await asOperator(["tenant", "create", tenantId, "--name", "Acme"])).toMatchObject({
    code: 0,
    stdout: `created tenant ${tenantId}\n`,
  });
  const issued = await asOperator(["key", "create", tenantId, "--label", "ci", "--json"]);
  expect(issued.code).toBe(0);
  const { key, id } = JSON.parse(issued.stdout) as { key: string; id: string };
  expect((await asTenant(["sessions"], key)).code).toBe(0);
  // The tenant's key is not the operator's.
  const refused = await asOperator(["tenant", "list"], key);
  expect(refused.code).not.toBe(0);

  const file = path.join(tmpdir(), `${tenantId}-settings.json`);
  writeFileSync(file, JSON.stringify({ models: ["local-*"], quotas: { concurrentRuns: 2 } }));
  expect((await asOperator(["settings", "set", tenantId, file])).code).toBe(0);
  const settings = await asOperator(["settings", "get", tenantId]);
  expect(JSON.parse(settings.stdout)).toEqual({ models: ["local-*"], quotas: { concurrentRuns: 2 } });

  const usage = await asTenant(["usage"], key);
  expect(usage).toMatchObject({ code: 0 });
  expect(usage.stdout).toContain("day\truns\tturns\ttokens\tcost\ttool s");
  expect((await asOperator(["key", "list", tenantId])).stdout).toContain(`${id}\tci\t`);

  expect((await asOperator(["key", "revoke", tenantId, id])).code).toBe(0);
  await eventually(async () => ((await asTenant(["sessions"], key)).code !== 0 ? true : undefined), 30_000);
});
