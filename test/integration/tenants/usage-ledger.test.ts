/**
 * The usage ledger on the real S3 server, every request seen on the wire: writers in three
 * "processes" (three TenantUsage instances) racing on one tenant lose nothing and count nothing
 * twice; records that arrive together go in fewer writes than records; reading a month is one
 * GET whatever the volume; a month written by older versions (one object per record) is folded
 * into the ledger once; a write that landed but whose answer was lost (the S3 client retries it
 * and is told 412) is not added again.
 */
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { createS3Client } from "../../../src/store/s3-config";
import { dayOf, TenantUsage, tenantBudgetState } from "../../../src/tenants/usage";
import { forwardHttp } from "../../support/forward-http";
import { s3Settings, uniqueName } from "../../support/integration-env";
import { type S3RequestLog, startS3RequestLog } from "../../support/s3-request-log";

let log: S3RequestLog;
let s3: S3Client;
const settings = s3Settings();
const prefix = `${uniqueName("usage-ledger")}/`;

beforeAll(async () => {
  log = await startS3RequestLog(settings.endpoint!);
  s3 = createS3Client({ ...settings, endpoint: log.endpoint });
});

afterAll(async () => {
  s3?.destroy();
  await log?.close();
});

/** The requests made while `action` ran, on the tenant's objects. */
async function requestsOf(tenantId: string, action: () => Promise<unknown>) {
  const before = log.requests().length;
  await action();
  return log
    .requests()
    .slice(before)
    .filter((request) => `${request.path}${request.listPrefix ?? ""}`.includes(`/tenants/${tenantId}/`));
}

const NOW = Date.UTC(2026, 11, 6, 12);
const YESTERDAY = NOW - 86_400_000;
const LAST_MONTH = Date.UTC(2026, 10, 30, 23);

test("writers racing in three processes: every record counted once, in fewer writes than records", async () => {
  const tenantId = uniqueName("race");
  const writers = [1, 2, 3].map(() => new TenantUsage(s3, settings.bucket, prefix, { now: () => NOW }));
  const perWriter = 40;
  const requests = await requestsOf(tenantId, () =>
    Promise.all(
      writers.flatMap((usage, w) =>
        Array.from({ length: perWriter }, (_, i) => {
          // Each writer's records spread over today, yesterday and the month before.
          const atMs = [NOW, YESTERDAY, LAST_MONTH][(w + i) % 3]!;
          if (i % 4 === 0) return usage.recordRun(tenantId, { atMs });
          if (i % 4 === 1) return usage.recordTool(tenantId, { atMs, ms: 1_500 });
          return usage.recordTurn(tenantId, { atMs, tokens: 100, costUsd: 0.000_125 });
        }),
      ),
    ),
  );
  const reader = new TenantUsage(s3, settings.bucket, prefix, { now: () => NOW });
  const days = await reader.days(tenantId, dayOf(LAST_MONTH), dayOf(NOW));
  const sum = (key: "runs" | "turns" | "tokens" | "costUsd" | "toolSeconds") =>
    days.reduce((total, day) => total + day[key], 0);
  const records = 3 * perWriter;
  expect(sum("runs")).toBe(records / 4);
  expect(sum("turns")).toBe(records / 2);
  expect(sum("tokens")).toBe((records / 2) * 100);
  expect(sum("costUsd")).toBeCloseTo((records / 2) * 0.000_125, 9);
  expect(sum("toolSeconds")).toBeCloseTo((records / 4) * 1.5, 9);
  // Each day got its share: today, yesterday and last month's last day each hold a third.
  expect(days.map((day) => day.runs + day.turns + day.toolSeconds / 1.5)).toEqual([
    records / 3,
    ...Array(4).fill(0),
    records / 3,
    records / 3,
  ]);
  const puts = requests.filter((request) => request.method === "PUT").length;
  expect(puts).toBeGreaterThan(0);
  // Two ledgers (this month, last month), three writers: batches, not one write per record.
  expect(puts).toBeLessThan(records / 2);
});

test("reading the current month is one GET, however much was recorded; a past month is cached", async () => {
  const tenantId = uniqueName("reads");
  const usage = new TenantUsage(s3, settings.bucket, prefix, { now: () => NOW });
  await Promise.all(
    Array.from({ length: 50 }, () => usage.recordTurn(tenantId, { atMs: NOW, tokens: 10, costUsd: 0 })),
  );
  await usage.recordTurn(tenantId, { atMs: LAST_MONTH, tokens: 7, costUsd: 0 });
  const reader = new TenantUsage(s3, settings.bucket, prefix, { now: () => NOW });

  // The month's shards and its fold of older records, read in parallel: nothing listed, nothing written.
  const admission = await requestsOf(tenantId, () =>
    tenantBudgetState(reader, tenantId, { tokensPerDay: 500, tokensPerMonth: 1_000 }, NOW),
  );
  expect(admission.map((request) => request.method)).toEqual(Array(9).fill("GET"));
  expect(admission.filter((request) => request.listPrefix !== undefined)).toEqual([]);
  const state = await tenantBudgetState(reader, tenantId, { tokensPerDay: 500 }, NOW);
  expect(state).toMatchObject({ reached: "tokensPerDay", today: { turns: 50, tokens: 500 } });
  expect(state.month.tokens).toBe(500);

  const firstRead = await requestsOf(tenantId, () => reader.day(tenantId, dayOf(LAST_MONTH)));
  expect(firstRead.map((request) => request.method)).toEqual(Array(9).fill("GET"));
  expect(await requestsOf(tenantId, () => reader.day(tenantId, dayOf(LAST_MONTH)))).toEqual([]);
  expect(await reader.day(tenantId, dayOf(LAST_MONTH))).toMatchObject({ turns: 1, tokens: 7 });
  // A month never written: read (and the records of older versions looked for), nothing written.
  const never = await requestsOf(tenantId, () => reader.day(tenantId, "2026-10-15"));
  expect(never.map((request) => request.method)).toEqual(Array(10).fill("GET"));
  expect(never.filter((request) => request.listPrefix !== undefined)).toHaveLength(1);
  expect(await reader.day(tenantId, "2026-10-15")).toMatchObject({ runs: 0, turns: 0, tokens: 0 });
  // A month still to come is empty and costs nothing.
  expect(await requestsOf(tenantId, () => reader.day(tenantId, "2027-01-15"))).toEqual([]);
});

test("a month recorded by older versions (one object per record) is folded into the ledger once", async () => {
  const tenantId = uniqueName("older");
  const folder = (ms: number) => `${prefix}tenants/${tenantId}/usage/${dayOf(ms)}/`;
  const older = [
    `${folder(YESTERDAY)}turn~s1~3~120~2500.json`,
    `${folder(YESTERDAY)}turn~s1~5~80~1500.json`,
    `${folder(YESTERDAY)}run~s1~run-1.json`,
    `${folder(NOW)}tool~s1~4~2250.json`,
  ];
  for (const key of older)
    await s3.send(new PutObjectCommand({ Bucket: settings.bucket, Key: key, Body: "{}" }));
  const usage = new TenantUsage(s3, settings.bucket, prefix, { now: () => NOW });

  const first = await requestsOf(tenantId, () =>
    usage.recordTurn(tenantId, { atMs: NOW, tokens: 1, costUsd: 0 }),
  );
  // The month's first write folds the older records (one LIST, older.json), then adds to a shard.
  expect(first.map((request) => request.method)).toEqual(["GET", "GET", "PUT", "GET", "PUT"]);
  expect(first[1]?.listPrefix).toBe(`${prefix}tenants/${tenantId}/usage/2026-12-`);
  expect(first[2]?.path).toMatch(/\/usage\/2026-12\/older\.json$/);
  expect(await usage.days(tenantId, dayOf(YESTERDAY), dayOf(NOW))).toEqual([
    { day: dayOf(YESTERDAY), runs: 1, turns: 2, tokens: 200, costUsd: 0.004, toolSeconds: 0 },
    { day: dayOf(NOW), runs: 0, turns: 1, tokens: 1, costUsd: 0, toolSeconds: 2.25 },
  ]);
  const again = await requestsOf(tenantId, () =>
    new TenantUsage(s3, settings.bucket, prefix, { now: () => NOW }).day(tenantId, dayOf(NOW)),
  );
  expect(again.map((request) => request.method)).toEqual(Array(9).fill("GET"));
});

test("tool seconds that may wait ride with the next write, get their own after the wait, and are written at once when the process stops", async () => {
  const tenantId = uniqueName("waits");
  const usage = new TenantUsage(s3, settings.bucket, prefix, { now: () => NOW, toolSecondsWaitMs: 400 });
  const puts = (requests: Awaited<ReturnType<typeof requestsOf>>) =>
    requests.filter((request) => request.method === "PUT").length;

  // A tool call's seconds, then the run's next model call: one write holds both.
  const together = await requestsOf(tenantId, async () => {
    await usage.recordTool(tenantId, { atMs: NOW, ms: 1_000 });
    await usage.recordTurn(tenantId, { atMs: NOW, tokens: 10, costUsd: 0 });
  });
  // The month's fold of older records (none), then one write holding both records.
  expect(puts(together)).toBe(2);
  expect(await usage.day(tenantId, dayOf(NOW))).toMatchObject({ turns: 1, toolSeconds: 1 });

  // Alone, they are written when the wait ends.
  const alone = await requestsOf(tenantId, () => usage.recordTool(tenantId, { atMs: NOW, ms: 500 }));
  expect(puts(alone)).toBe(0);
  const afterWait = await requestsOf(tenantId, () => new Promise((resolve) => setTimeout(resolve, 1_000)));
  expect(puts(afterWait)).toBe(1);
  expect(await usage.day(tenantId, dayOf(NOW))).toMatchObject({ turns: 1, toolSeconds: 1.5 });

  // A process that stops writes them at once, and every record after that too.
  await usage.recordTool(tenantId, { atMs: NOW, ms: 250 });
  const stopping = await requestsOf(tenantId, () => usage.stopWaiting());
  expect(puts(stopping)).toBe(1);
  const afterStop = await requestsOf(tenantId, () => usage.recordTool(tenantId, { atMs: NOW, ms: 250 }));
  expect(puts(afterStop)).toBe(1);
  expect(await usage.day(tenantId, dayOf(NOW))).toMatchObject({ turns: 1, toolSeconds: 2 });
});

test("a write that landed but whose answer was lost is not added again when the S3 client retries it", async () => {
  const tenantId = uniqueName("lost-answer");
  const upstream = new URL(log.endpoint);
  let dropNextLedgerPut = false;
  let dropped = 0;
  let ledgerPuts = 0;
  // Forwards everything; the armed PUT of a ledger reaches S3, and its answer is cut off.
  const proxy = createServer((incoming, outgoing) => {
    const ledgerPut = incoming.method === "PUT" && incoming.url?.includes(`/tenants/${tenantId}/usage/`);
    if (ledgerPut) ledgerPuts += 1;
    if (!(ledgerPut && dropNextLedgerPut)) return forwardHttp(upstream, incoming, outgoing);
    dropNextLedgerPut = false;
    const forward = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: "PUT",
        path: incoming.url,
        headers: incoming.headers,
      },
      (response) => {
        response.resume();
        response.on("end", () => {
          dropped += 1;
          outgoing.socket?.destroy();
        });
      },
    );
    incoming.pipe(forward);
  });
  await new Promise<void>((ready) => proxy.listen(0, "127.0.0.1", ready));
  const client = createS3Client({
    ...settings,
    endpoint: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
  });
  try {
    const usage = new TenantUsage(client, settings.bucket, prefix, { now: () => NOW });
    await usage.recordTurn(tenantId, { atMs: NOW, tokens: 10, costUsd: 0 });
    dropNextLedgerPut = true;
    await usage.recordTurn(tenantId, { atMs: NOW, tokens: 10, costUsd: 0 });
    expect(dropped).toBe(1);
    // The fold and the first write; then the cut-off write, sent again by the client (refused:
    // the version it was based on is gone).
    expect(ledgerPuts).toBe(4);
    expect(await usage.day(tenantId, dayOf(NOW))).toMatchObject({ turns: 2, tokens: 20 });
  } finally {
    client.destroy();
    await new Promise((closed) => proxy.close(closed));
  }
});

test("busy writers in three processes spread over the shards: about one PUT per write once spread", async () => {
  const tenantId = uniqueName("spread");
  const writers = [1, 2, 3].map(() => new TenantUsage(s3, settings.bucket, prefix, { now: () => NOW }));
  await writers[0]?.recordRun(tenantId, { atMs: NOW });
  const perWriter = 40;
  // Each writer as a busy worker: one record after another, all three at once.
  const requests = await requestsOf(tenantId, () =>
    Promise.all(
      writers.map(async (usage) => {
        for (let i = 0; i < perWriter; i++)
          await usage.recordTurn(tenantId, { atMs: NOW, tokens: 1, costUsd: 0 });
      }),
    ),
  );
  expect(await writers[0]?.day(tenantId, dayOf(NOW))).toMatchObject({ runs: 1, turns: 3 * perWriter });
  // One object written by all three would make most writes a conflict (a GET and another PUT).
  expect(requests.length).toBeLessThan(1.3 * 3 * perWriter);
});
