/**
 * Holder epochs over the real S3 server: of two disks taking a workspace from the same read, one
 * wins; an unreadable record is replaced, not a claim that fails forever.
 */
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { workspaceHolderKey } from "../../../src/store/session-keys";
import { WorkspaceHolders } from "../../../src/store/workspace-holders";
import { s3Client, s3Settings } from "../../support/integration-env";
import { newRef } from "./store-fixtures";

let client: S3Client;
let holders: WorkspaceHolders;
beforeAll(() => {
  client = s3Client();
  holders = new WorkspaceHolders(client, s3Settings());
});
afterAll(() => client.destroy());

test("two disks take the workspace from the same read: exactly one wins, and its epoch is the stored one", async () => {
  const ref = newRef();
  expect(await holders.read(ref)).toBeUndefined();
  const first = await Promise.all([holders.take(ref, undefined), holders.take(ref, undefined)]);
  expect(first.filter((epoch) => epoch !== undefined)).toHaveLength(1);
  const stored = await holders.read(ref);
  expect(stored?.epoch).toBe(first.find((epoch) => epoch !== undefined));

  if (!stored) throw new Error("no stored epoch");
  const second = await Promise.all([holders.take(ref, stored), holders.take(ref, stored)]);
  const winners = second.filter((epoch) => epoch !== undefined);
  expect(winners).toHaveLength(1);
  expect(winners[0]).not.toBe(stored.epoch);
  expect((await holders.read(ref))?.epoch).toBe(winners[0]);
  // A take from a version read before the last one is refused.
  expect(await holders.take(ref, stored)).toBeUndefined();
});

test("an unreadable holder record reads as no epoch and is replaced by the next take", async () => {
  const ref = newRef();
  const settings = s3Settings();
  await client.send(
    new PutObjectCommand({
      Bucket: settings.bucket,
      Key: workspaceHolderKey(settings.prefix, ref),
      Body: "{not json",
    }),
  );
  const stored = await holders.read(ref);
  expect(stored).toEqual({ epoch: undefined, etag: expect.any(String) });
  const epoch = await holders.take(ref, stored);
  expect(epoch).toEqual(expect.any(String));
  expect((await holders.read(ref))?.epoch).toBe(epoch);
});
