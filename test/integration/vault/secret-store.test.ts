/**
 * The tenant secret store against the test S3 server: values round-trip and are stored only as
 * ciphertext, a rotation is read at the next resolve, a deletion stops the value, tenants are
 * apart, a ciphertext or data key moved elsewhere does not open, and two first sets racing agree
 * on one data key.
 */
import { randomBytes } from "node:crypto";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { SecretStore } from "../../../src/tenants/secrets";
import { LocalKeyWrapper } from "../../../src/vault/key-wrapper";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";

const s3 = s3Client();
const settings = s3Settings();
const wrapper = new LocalKeyWrapper(randomBytes(32));
const newStore = (keyWrapper = wrapper) => new SecretStore(s3, settings, keyWrapper);

afterAll(() => s3.destroy());

async function rawObjects(prefix: string): Promise<Map<string, string>> {
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: settings.bucket, Prefix: prefix }));
  const objects = new Map<string, string>();
  for (const { Key } of listed.Contents ?? []) {
    const body = await s3.send(new GetObjectCommand({ Bucket: settings.bucket, Key }));
    objects.set(Key ?? "", (await body.Body?.transformToString("utf-8")) ?? "");
  }
  return objects;
}

const binding = (name: string) => ({ name, hosts: ["api.example.com"], in: ["header" as const] });

test("a value round-trips, is stored only as ciphertext, rotates and is deleted", async () => {
  const store = newStore();
  const tenant = uniqueName("tenant");
  const value = `ghp_${randomBytes(16).toString("hex")}`;
  const created = await store.set(tenant, binding("GITHUB_TOKEN"), value);
  expect(created.created).toBe(true);
  expect(created.metadata).toMatchObject({ name: "GITHUB_TOKEN", hosts: ["api.example.com"], version: 1 });
  expect(created.metadata).not.toHaveProperty("value");
  expect(await store.resolve(tenant, ["GITHUB_TOKEN", "NOT_THERE"])).toEqual({
    secrets: [{ name: "GITHUB_TOKEN", hosts: ["api.example.com"], in: ["header"], value }],
    missing: ["NOT_THERE"],
  });

  const raw = await rawObjects(store.folder(tenant));
  expect([...raw.keys()].sort()).toEqual(
    [store.secretKey(tenant, "GITHUB_TOKEN"), store.dataKeyKey(tenant)].sort(),
  );
  for (const text of raw.values()) {
    expect(text).not.toContain(value);
    expect(text).not.toContain(Buffer.from(value).toString("base64"));
    expect(text).not.toContain(Buffer.from(value).toString("hex"));
  }

  // A new process (nothing cached) reads the same value; a rotation is read at the next resolve.
  const rotatedValue = `ghp_${randomBytes(16).toString("hex")}`;
  const rotated = await newStore().set(
    tenant,
    { ...binding("GITHUB_TOKEN"), hosts: ["github.com"] },
    rotatedValue,
  );
  expect(rotated.created).toBe(false);
  expect(rotated.metadata).toMatchObject({
    version: 2,
    hosts: ["github.com"],
    createdAt: created.metadata.createdAt,
  });
  expect((await store.resolve(tenant, ["GITHUB_TOKEN"])).secrets).toEqual([
    { name: "GITHUB_TOKEN", hosts: ["github.com"], in: ["header"], value: rotatedValue },
  ]);
  expect(await store.list(tenant)).toEqual([rotated.metadata]);
  expect(await store.get(tenant, "GITHUB_TOKEN")).toEqual(rotated.metadata);

  expect(await store.delete(tenant, "GITHUB_TOKEN")).toBe(true);
  expect(await store.delete(tenant, "GITHUB_TOKEN")).toBe(false);
  expect(await store.resolve(tenant, ["GITHUB_TOKEN"])).toEqual({ secrets: [], missing: ["GITHUB_TOKEN"] });
  expect(await store.list(tenant)).toEqual([]);
});

test("another tenant's resolve of the same name finds nothing", async () => {
  const store = newStore();
  const [a, b] = [uniqueName("tenant"), uniqueName("tenant")];
  await store.set(a, binding("API_KEY"), "value-of-a");
  expect(await store.resolve(b, ["API_KEY"])).toEqual({ secrets: [], missing: ["API_KEY"] });
  expect(await store.get(b, "API_KEY")).toBeUndefined();
  expect(await store.list(b)).toEqual([]);
  expect(await store.delete(b, "API_KEY")).toBe(false);
  expect((await store.resolve(a, ["API_KEY"])).secrets[0]?.value).toBe("value-of-a");
});

test("a tampered ciphertext, a ciphertext moved to another name, or a data key moved to another tenant does not open", async () => {
  const store = newStore();
  const [a, b] = [uniqueName("tenant"), uniqueName("tenant")];
  await store.set(a, binding("ONE"), "value-one");
  await store.set(a, binding("TWO"), "value-two");
  await store.set(b, binding("ONE"), "value-of-b");
  const read = async (key: string) =>
    JSON.parse(
      (await (
        await s3.send(new GetObjectCommand({ Bucket: settings.bucket, Key: key }))
      ).Body?.transformToString("utf-8")) ?? "",
    );
  const put = (key: string, value: unknown) =>
    s3.send(new PutObjectCommand({ Bucket: settings.bucket, Key: key, Body: JSON.stringify(value) }));

  // One bit of the ciphertext flipped.
  const one = await read(store.secretKey(a, "ONE"));
  const bytes = Buffer.from(one.ciphertext, "base64");
  bytes[20] = (bytes[20] ?? 0) ^ 1;
  await put(store.secretKey(a, "ONE"), { ...one, ciphertext: bytes.toString("base64") });
  await expect(newStore().resolve(a, ["ONE"])).rejects.toThrow(/does not open/);

  // TWO's ciphertext under ONE's record (its name and version kept): the additional data differs.
  const two = await read(store.secretKey(a, "TWO"));
  await put(store.secretKey(a, "ONE"), { ...one, ciphertext: two.ciphertext });
  await expect(newStore().resolve(a, ["ONE"])).rejects.toThrow(/does not open/);
  // The same ciphertext with its version changed.
  await put(store.secretKey(a, "TWO"), { ...two, version: 2 });
  await expect(newStore().resolve(a, ["TWO"])).rejects.toThrow(/does not open/);

  // A's wrapped data key copied over B's: unwrapping binds the tenant.
  await put(store.dataKeyKey(b), await read(store.dataKeyKey(a)));
  await expect(newStore().resolve(b, ["ONE"])).rejects.toThrow(/does not open/);

  // Another deployment key cannot unwrap the tenant's data key.
  await put(store.secretKey(a, "TWO"), two);
  await expect(newStore(new LocalKeyWrapper(randomBytes(32))).resolve(a, ["TWO"])).rejects.toThrow(
    /does not open/,
  );
  expect((await newStore().resolve(a, ["TWO"])).secrets[0]?.value).toBe("value-two");
});

test("concurrent first sets of a tenant agree on one data key", async () => {
  const tenant = uniqueName("tenant");
  const stores = Array.from({ length: 6 }, () => newStore());
  const names = stores.map((_, index) => `RACE_${index}`);
  await Promise.all(
    stores.map((store, index) => store.set(tenant, binding(names[index] ?? ""), `value-${index}`)),
  );
  // Every value opens with the one stored key (a fresh store unwraps it).
  const resolved = await newStore().resolve(tenant, names);
  expect(resolved.missing).toEqual([]);
  expect(resolved.secrets.map((secret) => secret.value)).toEqual(names.map((_, index) => `value-${index}`));
});

test("a secret's name is looked up as a name only", async () => {
  const store = newStore();
  const tenant = uniqueName("tenant");
  expect(await store.resolve(tenant, ["../x", "data-key", "lower"])).toEqual({
    secrets: [],
    missing: ["../x", "data-key", "lower"],
  });
  expect(() => store.secretKey(tenant, "../x")).toThrow(RangeError);
  expect(() => store.folder("../other")).toThrow();
});
