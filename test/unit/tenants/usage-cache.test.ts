/**
 * A tenant's usage totals per day, without a server: a past day's totals are listed once a minute
 * at most (concurrent reads share the listing), today's on every read.
 */
import { S3Client } from "@aws-sdk/client-s3";
import { TenantUsage } from "../../../src/tenants/usage";

const NOW = Date.UTC(2026, 11, 4, 12);

/** A bucket whose every day holds one turn of 100 tokens; counts the LIST requests by prefix. */
function usageOf(now: () => number) {
  const lists: string[] = [];
  // A real client (the paginator insists), whose requests never leave the process.
  const s3 = new S3Client({ region: "us-east-1" });
  s3.send = (async (command: { input: { Prefix: string } }) => {
    lists.push(command.input.Prefix);
    await new Promise((resolve) => setImmediate(resolve));
    return { Contents: [{ Key: `${command.input.Prefix}turn~s1~3~100~2000.json` }], IsTruncated: false };
  }) as unknown as S3Client["send"];
  return { usage: new TenantUsage(s3, "bucket", "keel/", now), lists };
}

test("a past day's totals are reused for a minute; concurrent reads share one listing", async () => {
  let now = NOW;
  const { usage, lists } = usageOf(() => now);
  const [first, second] = await Promise.all([usage.day("t1", "2026-12-03"), usage.day("t1", "2026-12-03")]);
  expect(first).toEqual({
    day: "2026-12-03",
    runs: 0,
    turns: 1,
    tokens: 100,
    costUsd: 0.002,
    toolSeconds: 0,
  });
  expect(second).toEqual(first);
  now += 59_999;
  await usage.day("t1", "2026-12-03");
  expect(lists).toEqual(["keel/tenants/t1/usage/2026-12-03/"]);
  now += 1;
  await usage.day("t1", "2026-12-03");
  expect(lists).toHaveLength(2);
});

test("today's totals are listed on every read, and each tenant's days apart", async () => {
  const { usage, lists } = usageOf(() => NOW);
  await usage.day("t1", "2026-12-04");
  await usage.day("t1", "2026-12-04");
  await usage.day("t2", "2026-12-03");
  await usage.day("t1", "2026-12-03");
  expect(lists).toEqual([
    "keel/tenants/t1/usage/2026-12-04/",
    "keel/tenants/t1/usage/2026-12-04/",
    "keel/tenants/t2/usage/2026-12-03/",
    "keel/tenants/t1/usage/2026-12-03/",
  ]);
});
