/**
 * The usage ledger in S3 (docs/api.md, "Usage"): one object per tenant and UTC month,
 * `tenants/{t}/usage/{YYYY-MM}.json`, holding each day's totals as whole numbers. Read with one
 * GET; added to by compare-and-swap (`If-Match` on the version read), each process keeping the
 * version it last read or wrote so that an uncontended addition is one PUT. A missing month is
 * created at its first read or write from the per-record objects older versions kept, listed
 * once (docs/api.md: what a rolling upgrade misses).
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

/** A ledger as read or last written by this process: its ETag names the version. */
interface LedgerVersion {
  ledger: Ledger;
  /** `absent`: no ledger is stored yet (a write creates it if none appeared meanwhile). */
  etag: string | "absent";
}

/** Ledgers whose last version this process keeps for its next write (one GET saved on each). */
const VERSIONS_KEPT = 10_000;
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
  /** The version of each ledger this process last read or wrote, for its next write. */
  private readonly versions = new BoundedCache<string, LedgerVersion>({ capacity: VERSIONS_KEPT });

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    /** The deployment's S3 prefix, used verbatim. */
    private readonly prefix: string,
  ) {
    this.objects = new ConditionalObjects(s3, bucket);
  }

  /** The month's ledger as stored now (YYYY-MM): one GET once it exists. */
  async read(tenantId: string, month: string): Promise<Ledger> {
    return (await this.currentVersion(tenantId, month, "read")).ledger;
  }

  /** Adds `days` to the month's ledger by compare-and-swap; throws when every attempt lost a race. */
  async add(tenantId: string, month: string, days: ReadonlyMap<string, DayTotals>): Promise<void> {
    const key = this.ledgerKey(tenantId, month);
    const writeId = randomBytes(9).toString("base64url");
    let base = this.versions.get(key) ?? (await this.currentVersion(tenantId, month, "add"));
    for (let attempt = 1; attempt <= WRITE_ATTEMPTS; attempt++) {
      const next = withAdded(base.ledger, days, writeId);
      const etag = await this.objects.writeIfVersion(
        key,
        JSON.stringify(next),
        "application/json",
        base.etag,
      );
      if (etag !== undefined) {
        this.versions.set(key, { ledger: next, etag });
        return;
      }
      // Refused: another writer went first — or this one did, by an attempt whose answer was lost.
      this.versions.delete(key);
      base = await this.currentVersion(tenantId, month, "add");
      if (base.ledger.writes.includes(writeId)) return;
      await sleep(Math.random() * 10 * Math.min(attempt, 5));
    }
    throw new Error(`the usage ledger ${key} changed under every one of ${WRITE_ATTEMPTS} writes`);
  }

  /** The ledger as stored now, kept for writes; when missing, the records of older versions (see below). */
  private async currentVersion(
    tenantId: string,
    month: string,
    purpose: "read" | "add",
  ): Promise<LedgerVersion> {
    const key = this.ledgerKey(tenantId, month);
    for (;;) {
      const stored = await this.readVersion(key);
      if (stored) {
        this.versions.set(key, stored);
        return stored;
      }
      const ledger = await this.recordsOfOlderVersions(tenantId, month);
      // An addition creates it with what it adds; a read only when there is something to keep
      // (a read of a month never written writes nothing).
      if (purpose === "add" || Object.keys(ledger.days).length === 0) return { ledger, etag: "absent" };
      const etag = await this.objects.writeIfVersion(
        key,
        JSON.stringify(ledger),
        "application/json",
        "absent",
      );
      if (etag !== undefined) {
        const created = { ledger, etag };
        this.versions.set(key, created);
        return created;
      }
      // Created meanwhile by another process: read that one.
    }
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
   * One listing of the month's folders (a LIST request per 1,000 records); empty for most months.
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

  ledgerKey(tenantId: string, month: string): string {
    return `${this.tenantFolder(tenantId)}usage/${month}.json`;
  }

  private tenantFolder(tenantId: string): string {
    assertValidId("tenant", tenantId);
    return `${this.prefix}tenants/${tenantId}/`;
  }
}
