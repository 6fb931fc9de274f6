/**
 * The vault's AWS KMS key wrapper against local-kms, a KMS stand-in written by others
 * (scripts/ensure-local-kms.mjs builds it from the Go module proxy when missing): data keys made
 * by GenerateDataKey and unwrapped by Decrypt under the tenant's encryption context, secrets that
 * round-trip through the store, and a data key of one tenant that KMS refuses to unwrap for
 * another. Skipped, saying why, when local-kms cannot be built (no Go).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateKeyCommand, KMSClient } from "@aws-sdk/client-kms";
import { freePort, waitForPort } from "../../../src/cli/devstack/ports";
import { SecretStore } from "../../../src/tenants/secrets";
import { KmsKeyWrapper } from "../../../src/vault/key-wrapper";
import { keyWrapperOf } from "../../../src/vault/settings";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";

const root = join(__dirname, "../../..");
const LOCAL_KMS = join(root, ".keel/tools/local-kms/local-kms");

/** Builds local-kms when missing (a minute of Go the first time); the reason when it cannot. */
function ensureLocalKms(): string | undefined {
  try {
    execFileSync(process.execPath, [join(root, "scripts/ensure-local-kms.mjs")], {
      stdio: ["ignore", "inherit", "pipe"],
      timeout: 10 * 60_000,
    });
    return undefined;
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return `local-kms is not available (${stderr || String(error)}): the KMS key wrapper tests are skipped`;
  }
}

const skipReason = ensureLocalKms();
if (skipReason) console.warn(skipReason);
const kmsTest = skipReason ? test.skip : test;

let server: ChildProcess | undefined;
let dataDir: string | undefined;
let kms: KMSClient;
let keyId: string;
const s3 = s3Client();

beforeAll(async () => {
  if (skipReason) return;
  const port = await freePort();
  dataDir = mkdtempSync(join(tmpdir(), "keel-local-kms-"));
  const started = spawn(LOCAL_KMS, [], {
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      KMS_REGION: "us-east-1",
      KMS_ACCOUNT_ID: "111122223333",
      KMS_DATA_PATH: dataDir,
    },
    stdio: ["ignore", "ignore", "ignore"],
  });
  server = started;
  await waitForPort(port, 30_000, () => started.exitCode === null);
  kms = new KMSClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  });
  const created = await kms.send(new CreateKeyCommand({ Description: "keel vault test" }));
  keyId = created.KeyMetadata?.Arn ?? "";
});

afterAll(() => {
  server?.kill("SIGTERM");
  kms?.destroy();
  s3.destroy();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

kmsTest(
  "data keys come from KMS under the tenant's encryption context; another tenant's does not unwrap",
  async () => {
    const wrapper = new KmsKeyWrapper(kms, keyId);
    const made = await wrapper.newDataKey("tenant-a");
    expect(made.plaintext).toHaveLength(32);
    expect(await wrapper.unwrap("tenant-a", made.wrapped)).toEqual(made.plaintext);
    await expect(wrapper.unwrap("tenant-b", made.wrapped)).rejects.toThrow();
    // Another key cannot decrypt it either.
    const other = await kms.send(new CreateKeyCommand({ Description: "another key" }));
    await expect(
      new KmsKeyWrapper(kms, other.KeyMetadata?.Arn ?? "").unwrap("tenant-a", made.wrapped),
    ).rejects.toThrow();
  },
);

kmsTest("secrets round-trip through the store with KEEL_VAULT_KMS_KEY_ID's wrapper", async () => {
  const settings = s3Settings();
  const store = new SecretStore(s3, settings, keyWrapperOf({ kmsKeyId: keyId }, kms));
  const [a, b] = [uniqueName("tenant"), uniqueName("tenant")];
  await store.set(a, { name: "NPM_TOKEN", hosts: ["registry.npmjs.org"], in: ["header"] }, "npm-value-a");
  await store.set(b, { name: "NPM_TOKEN", hosts: ["registry.npmjs.org"], in: ["header"] }, "npm-value-b");
  const fresh = new SecretStore(s3, settings, keyWrapperOf({ kmsKeyId: keyId }, kms));
  expect((await fresh.resolve(a, ["NPM_TOKEN"])).secrets[0]?.value).toBe("npm-value-a");
  expect((await fresh.resolve(b, ["NPM_TOKEN"])).secrets[0]?.value).toBe("npm-value-b");
});
