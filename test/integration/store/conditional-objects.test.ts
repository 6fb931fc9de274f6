/** Conditional S3 writes against the real S3 server: create-if-absent, replace-if-match, read-after-conflict. */
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { ConditionalObjects, readAfterConflict } from "../../../src/store/conditional-objects";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";

let client: S3Client;
let objects: ConditionalObjects;
beforeAll(() => {
  client = s3Client();
  objects = new ConditionalObjects(client, s3Settings().bucket);
});
afterAll(() => client.destroy());

const keyFor = () => `${s3Settings().prefix}conditional-objects-test/${uniqueName("object")}.json`;

async function bodyAt(key: string): Promise<string | undefined> {
  try {
    const response = await client.send(new GetObjectCommand({ Bucket: s3Settings().bucket, Key: key }));
    return await response.Body?.transformToString("utf-8");
  } catch (error) {
    if ((error as { name?: string }).name === "NoSuchKey") return undefined;
    throw error;
  }
}

async function etagOf(key: string): Promise<string> {
  const head = await client.send(new HeadObjectCommand({ Bucket: s3Settings().bucket, Key: key }));
  if (!head.ETag) throw new Error(`no ETag for ${key}`);
  return head.ETag;
}

test("create-if-absent writes once; a second create is refused and leaves the first body", async () => {
  const key = keyFor();
  expect(await objects.createIfAbsent(key, "first", "text/plain")).toBe(true);
  expect(await objects.createIfAbsent(key, "second", "text/plain")).toBe(false);
  expect(await bodyAt(key)).toBe("first");
});

test("concurrent creates of one key: exactly one wins, whatever status the server answers the others with", async () => {
  const key = keyFor();
  const outcomes = await Promise.all(
    Array.from({ length: 12 }, (_, i) => objects.createIfAbsent(key, `writer ${i}`, "text/plain")),
  );
  expect(outcomes.filter(Boolean)).toHaveLength(1);
  expect(await bodyAt(key)).toBe(`writer ${outcomes.indexOf(true)}`);
});

test("replace-if-match replaces the version read and refuses a stale one", async () => {
  const key = keyFor();
  await objects.createIfAbsent(key, "v1", "text/plain");
  const v1 = await etagOf(key);
  expect(await objects.replaceIfMatch(key, "v2", "text/plain", v1)).toBe(true);
  expect(await bodyAt(key)).toBe("v2");
  expect(await objects.replaceIfMatch(key, "v3 from a stale read", "text/plain", v1)).toBe(false);
  expect(await bodyAt(key)).toBe("v2");
});

test("replace-if-match of an object removed since it was read is refused, and creates nothing", async () => {
  const key = keyFor();
  await objects.createIfAbsent(key, "v1", "text/plain");
  const v1 = await etagOf(key);
  await client.send(new DeleteObjectCommand({ Bucket: s3Settings().bucket, Key: key }));
  expect(await objects.replaceIfMatch(key, "v2", "text/plain", v1)).toBe(false);
  expect(await objects.createIfAbsent(key, "fresh", "text/plain")).toBe(true);
});

test("read-after-conflict returns the object once visible and undefined when it never appears", async () => {
  const key = keyFor();
  await objects.createIfAbsent(key, "there", "text/plain");
  expect(await readAfterConflict(() => bodyAt(key))).toBe("there");
  let reads = 0;
  const missing = await readAfterConflict(async () => {
    reads += 1;
    return bodyAt(keyFor());
  });
  expect(missing).toBeUndefined();
  expect(reads).toBe(5);
});
