/** `listObjects` against the real S3-compatible server: every page, and `StartAfter` kept across pages. */
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { listObjects } from "../../../src/store/s3-requests";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";
import { countOf, recordCommands } from "./store-fixtures";

describe("listObjects", () => {
  let client: S3Client;
  const bucket = () => s3Settings().bucket;
  beforeAll(() => {
    client = s3Client();
  });
  afterAll(() => client.destroy());

  test("lists every key after StartAfter, in order, one request per page", async () => {
    const prefix = `${uniqueName("pages")}/`;
    const keys = Array.from({ length: 13 }, (_, i) => `${prefix}${String(i).padStart(4, "0")}`);
    await Promise.all(
      keys.map((Key) => client.send(new PutObjectCommand({ Bucket: bucket(), Key, Body: Key }))),
    );
    const sent = recordCommands(client);

    const all: string[] = [];
    for await (const object of listObjects(client, { Bucket: bucket(), Prefix: prefix }, 4))
      all.push(object.Key ?? "");
    expect(all).toEqual(keys);
    expect(countOf(sent, "ListObjectsV2Command")).toBe(4);

    const after: string[] = [];
    const objects = listObjects(client, { Bucket: bucket(), Prefix: prefix, StartAfter: keys[2] }, 3);
    for await (const object of objects) after.push(object.Key ?? "");
    expect(after).toEqual(keys.slice(3));
  });
});
