import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";

function statusOf(error: unknown): number | undefined {
  return error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
}

describe("real S3-compatible server", () => {
  let client: S3Client;
  const bucket = () => s3Settings().bucket;

  beforeAll(() => {
    client = s3Client();
  });
  afterAll(() => client.destroy());

  test("If-None-Match: * refuses to overwrite an existing key with 412 and keeps the first body", async () => {
    const key = `${uniqueName("cond")}/entry`;
    await client.send(new PutObjectCommand({ Bucket: bucket(), Key: key, Body: "first", IfNoneMatch: "*" }));
    const second = client.send(
      new PutObjectCommand({ Bucket: bucket(), Key: key, Body: "second", IfNoneMatch: "*" }),
    );
    await expect(second).rejects.toThrow(S3ServiceException);
    expect(await second.catch(statusOf)).toBe(412);
    const stored = await client.send(new GetObjectCommand({ Bucket: bucket(), Key: key }));
    expect(await stored.Body?.transformToString()).toBe("first");
  });

  test("concurrent conditional creates of one key have exactly one winner", async () => {
    const key = `${uniqueName("race")}/entry`;
    const attempts = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) =>
        client.send(
          new PutObjectCommand({ Bucket: bucket(), Key: key, Body: `writer-${i}`, IfNoneMatch: "*" }),
        ),
      ),
    );
    const winners = attempts.flatMap((attempt, i) => (attempt.status === "fulfilled" ? [i] : []));
    expect(winners).toHaveLength(1);
    for (const attempt of attempts) {
      if (attempt.status === "rejected") expect(statusOf(attempt.reason)).toBe(412);
    }
    const stored = await client.send(new GetObjectCommand({ Bucket: bucket(), Key: key }));
    expect(await stored.Body?.transformToString()).toBe(`writer-${winners[0]}`);
  });

  test("If-Match replaces only the version that was read", async () => {
    const key = `${uniqueName("match")}/snapshot`;
    const created = await client.send(new PutObjectCommand({ Bucket: bucket(), Key: key, Body: "v1" }));
    const stale = client.send(
      new PutObjectCommand({ Bucket: bucket(), Key: key, Body: "x", IfMatch: '"0000"' }),
    );
    expect(await stale.catch(statusOf)).toBe(412);
    await client.send(
      new PutObjectCommand({ Bucket: bucket(), Key: key, Body: "v2", IfMatch: created.ETag }),
    );
    const stored = await client.send(new GetObjectCommand({ Bucket: bucket(), Key: key }));
    expect(await stored.Body?.transformToString()).toBe("v2");
  });

  test("ListObjectsV2 pages through every key in order", async () => {
    const prefix = `${uniqueName("list")}/`;
    const keys = Array.from({ length: 23 }, (_, i) => `${prefix}${String(i).padStart(6, "0")}`);
    await Promise.all(
      keys.map((Key) => client.send(new PutObjectCommand({ Bucket: bucket(), Key, Body: Key }))),
    );
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: bucket(), Prefix: prefix, MaxKeys: 5, ContinuationToken: token }),
      );
      pages += 1;
      seen.push(...(page.Contents ?? []).map((object) => object.Key!));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    expect(pages).toBe(5);
    expect(seen).toEqual(keys);
    await client.send(
      new DeleteObjectsCommand({ Bucket: bucket(), Delete: { Objects: keys.map((Key) => ({ Key })) } }),
    );
  });
});
