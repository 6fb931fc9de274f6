/**
 * The usage ledger in S3 (docs/api.md, "Usage"): per tenant and UTC month, LEDGER_SHARDS objects
 * `tenants/{t}/usage/{YYYY-MM}/{shard}.json`, each holding day totals as whole numbers, plus
 * `older.json`, the fold of the per-record objects older versions kept. A month's usage is the
 * sum of them all: a read is LEDGER_SHARDS + 1 GETs in parallel, whatever the volume.
 *
 * Writers add to one shard by compare-and-swap (`If-Match` on the version read). A process keeps
 * to the shard it last wrote and the version it wrote, so an uncontended addition is one PUT; a
 * writer refused because another wrote the same shard moves to another shard at random, so
 * concurrent processes spread over the shards instead of retrying against each other.
 */

import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { z } from "zod";
import { BoundedCache } from "../core/bounded-cache";
import { ConditionalObjects } from "../store/conditional-objects";
import { isNotFound, listObjects } from "../store/s3-requests";
import { assertValidId } from "../store/session-keys";

/** One day's totals as the ledger stores them: whole numbers only, so sums are exact. */
const DayTotalsSchema = z.object({
  runs: z.number().int().nonnegative(),
  turns: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative(),
  costMicroUsd: z.number().int().nonnegative(),
  toolMs: z.number().int().nonnegative(),
});
export type DayTotals = z.infer<typeof DayTotalsSchema>;

const LedgerSchema = z.object({
  days: z.record(z.string(), DayTotalsSchema),
  /**
   * The ids of the last additions (RECENT_WRITES): a writer told 412 finds out whether the write
   * refused was its own, landed by an attempt whose answer was lost and retried by the S3 client.
   */
  writes: z.array(z.string()).default([]),
});
export type Ledger = z.infer<typeof LedgerSchema>;

/** A shard as read or last written by this process: its ETag names the version. */
interface LedgerVersion {
  ledger: Ledger;
  /** `absent`: no ledger is stored yet (a write creates it if none appeared meanwhile). */
  etag: string | "absent";
}

/** Shards of a month's ledger: a few times the processes that write one tenant at once. */
const LEDGER_SHARDS = 8;
/** Shards whose last version this process keeps for its next write (one GET saved on each). */
const VERSIONS_KEPT = 10_000;
/** Months (a tenant's, each) whose older records this process knows are folded. */
const FOLDS_KNOWN = 10_000;
/** Compare-and-swap attempts of one addition before it is given up (and its callers told). */
const WRITE_ATTEMPTS = 40;
/** Addition ids a ledger keeps: far more than the writes that can land between one's try and its check. */
const RECENT_WRITES = 32;
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export const noTotals = (): DayTotals => ({ runs: 0, turns: 0, tokens: 0, costMicroUsd: 0, toolMs: 0 });

export function addTotals(into: DayTotals, more: Partial<DayTotals>): void {
  into.runs += more.runs ?? 0;
  into.turns += more.turns ?? 0;
  into.tokens += more.tokens ?? 0;
  into.costMicroUsd += more.costMicroUsd ?? 0;
  into.toolMs += more.toolMs ?? 0;
}

/** The ledger with `days` added (a new object: a version kept for the next write stays as read). */
function withAdded(ledger: Ledger, days: ReadonlyMap<string, DayTotals>, writeId: string): Ledger {
  const next: Ledger = {
    days: { ...ledger.days },
    writes: [...ledger.writes, writeId].slice(-RECENT_WRITES),
  };
  for (const [day, totals] of days) {
    const sum = { ...(next.days[day] ?? noTotals()) };
    addTotals(sum, totals);
    next.days[day] = sum;
  }
  return next;
}

export class UsageLedgers {
  private readonly objects: ConditionalObjects;
  /** The version of each shard this process last read or wrote, for its next write. */
  private readonly versions = new BoundedCache<string, LedgerVersion>({ capacity: VERSIONS_KEPT });
  /** The shard this process writes each month's additions to, until another writer meets it there. */
  private readonly shardOf = new BoundedCache<string, number>({ capacity: VERSIONS_KEPT });
  /** Months whose `older.json` exists (the fold of older versions' records is done). */
  private readonly folded = new BoundedCache<string, true>({ capacity: FOLDS_KNOWN });

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    /** The deployment's S3 prefix, used verbatim. */
    private readonly prefix: string,
  ) {
    this.objects = new ConditionalObjects(s3, bucket);
  }

  /** The month's usage as stored now (YYYY-MM): the sum of its shards and of its older records. */
  async read(tenantId: string, month: string): Promise<Ledger> {
    const folder = this.monthFolder(tenantId, month);
    const keys = Array.from({ length: LEDGER_SHARDS }, (_, shard) => `${folder}${shard}.json`);
    const [older, ...shards] = await Promise.all(
      [`${folder}older.json`, ...keys].map((key) => this.readVersion(key)),
    );
    shards.forEach((shard, i) => {
      if (shard) this.versions.set(keys[i] ?? "", shard);
    });
    const parts = shards.flatMap((shard) => (shard ? [shard.ledger] : []));
    // Not folded yet (no write this month since the upgrade): read the older records themselves.
    parts.push(older ? older.ledger : await this.recordsOfOlderVersions(tenantId, month));
    const sum: Ledger = { days: {}, writes: [] };
    for (const part of parts)
      for (const [day, totals] of Object.entries(part.days)) {
        const into = sum.days[day] ?? noTotals();
        addTotals(into, totals);
        sum.days[day] = into;
      }
    return sum;
  }

  /**
   * Adds `days` to one of the month's shards by compare-and-swap; throws when every attempt lost
   * a race. The month's older records are folded first (once per month, by whichever writer comes
   * first).
   */
  async add(tenantId: string, month: string, days: ReadonlyMap<string, DayTotals>): Promise<void> {
    await this.foldOlderRecords(tenantId, month);
    const folder = this.monthFolder(tenantId, month);
    const writeId = randomBytes(9).toString("base64url");
    let shard = this.shardOf.get(folder) ?? randomShard();
    for (let attempt = 1; attempt <= WRITE_ATTEMPTS; attempt++) {
      const key = `${folder}${shard}.json`;
      const base = this.versions.get(key) ?? (await this.readVersion(key)) ?? ABSENT;
      const next = withAdded(base.ledger, days, writeId);
      const etag = await this.objects.writeIfVersion(
        key,
        JSON.stringify(next),
        "application/json",
        base.etag,
      );
      if (etag !== undefined) {
        this.versions.set(key, { ledger: next, etag });
        this.shardOf.set(folder, shard);
        return;
      }
      // Refused: another writer went first — or this one did, by an attempt whose answer was lost.
      this.versions.delete(key);
      const now = await this.readVersion(key);
      if (now?.ledger.writes.includes(writeId)) {
        this.versions.set(key, now);
        this.shardOf.set(folder, shard);
        return;
      }
      if (now) this.versions.set(key, now);
      // Someone else writes this shard: go where nobody may be.
      shard = (shard + 1 + Math.floor(Math.random() * (LEDGER_SHARDS - 1))) % LEDGER_SHARDS;
      if (attempt >= LEDGER_SHARDS)
        await sleep(Math.random() * 10 * Math.min(attempt - LEDGER_SHARDS + 1, 5));
    }
    throw new Error(`every shard of the usage ledger ${folder} changed under ${WRITE_ATTEMPTS} writes`);
  }

  /** The month folder's key of its ledger (a cache key for whole-month reads). */
  ledgerKey(tenantId: string, month: string): string {
    return this.monthFolder(tenantId, month);
  }

  /** Creates the month's `older.json` from the records older versions wrote, unless it exists. */
  private async foldOlderRecords(tenantId: string, month: string): Promise<void> {
    const key = `${this.monthFolder(tenantId, month)}older.json`;
    if (this.folded.get(key)) return;
    if (!(await this.readVersion(key))) {
      const older = await this.recordsOfOlderVersions(tenantId, month);
      // A concurrent fold of the same records may win: either is the month's one fold.
      await this.objects.createIfAbsent(key, JSON.stringify(older), "application/json");
    }
    this.folded.set(key, true);
  }

  private async readVersion(key: string): Promise<LedgerVersion | undefined> {
    try {
      const response = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      const text = (await response.Body?.transformToString("utf-8")) ?? "";
      if (!response.ETag) throw new Error(`S3 answered the read of ${key} without an ETag`);
      return { ledger: LedgerSchema.parse(JSON.parse(text)), etag: response.ETag };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * A month's totals from the objects older versions wrote, one per record, under each day's
   * folder (`usage/{YYYY-MM-DD}/`): the key named the record and its amounts
   * (`turn~{session}~{slot}~{tokens}~{micro-USD}`, `run~{session}~{run}`, `tool~{session}~{slot}~{ms}`).
   * One listing of the month's days (a LIST request per 1,000 records); empty for most months.
   */
  private async recordsOfOlderVersions(tenantId: string, month: string): Promise<Ledger> {
    const ledger: Ledger = { days: {}, writes: [] };
    const usageFolder = `${this.tenantFolder(tenantId)}usage/`;
    const prefix = `${usageFolder}${month}-`;
    for await (const object of listObjects(this.s3, { Bucket: this.bucket, Prefix: prefix })) {
      const [day = "", name = ""] = (object.Key ?? "").slice(usageFolder.length).split("/");
      const [kind, , , a, b] = name.replace(/\.json$/, "").split("~");
      const totals = ledger.days[day] ?? noTotals();
      if (kind === "turn")
        addTotals(totals, { turns: 1, tokens: Number(a) || 0, costMicroUsd: Number(b) || 0 });
      else if (kind === "run") totals.runs += 1;
      else if (kind === "tool") totals.toolMs += Number(a) || 0;
      else continue;
      ledger.days[day] = totals;
    }
    return ledger;
  }

  private monthFolder(tenantId: string, month: string): string {
    return `${this.tenantFolder(tenantId)}usage/${month}/`;
  }

  private tenantFolder(tenantId: string): string {
    assertValidId("tenant", tenantId);
    return `${this.prefix}tenants/${tenantId}/`;
  }
}

const ABSENT: LedgerVersion = { ledger: { days: {}, writes: [] }, etag: "absent" };

const randomShard = (): number => Math.floor(Math.random() * LEDGER_SHARDS);
