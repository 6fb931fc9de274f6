/**
 * Usage per tenant per UTC day (docs/api.md, "Usage"): model turns (tokens, cost), runs started
 * and tool seconds, recorded as one small object each under `tenants/{t}/usage/{day}/`. The key
 * names the thing counted (the session and the turn's entry slot, the run's id, the tool call) and
 * its amounts, so a retried activity writes the same key again instead of counting twice, and a
 * day's totals are read with LIST requests alone (1,000 records per request), no reads.
 *
 * Keys: `turn~{sessionId}~{slotSeq}~{tokens}~{costMicroUsd}` (the day the turn's activity was
 * first scheduled, the same for every retry), `run~{sessionId}~{runId}`,
 * `tool~{sessionId}~{resultSlotSeq}~{milliseconds}` (ids never hold `~`).
 */
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { BoundedCache } from "../core/bounded-cache";
import { listObjects } from "../store/s3-requests";
import { assertValidId } from "../store/session-keys";
import type { QuotaName, Quotas } from "./types";

export interface UsageDay {
  /** YYYY-MM-DD (UTC). */
  day: string;
  runs: number;
  turns: number;
  tokens: number;
  costUsd: number;
  toolSeconds: number;
}

/** How long the totals of a past day are reused (a late record of that day shows after this). */
const PAST_DAY_CACHE_MS = 60_000;
/** Past days (a tenant's, each) whose totals are kept: a month's for some 300 busy tenants. */
const PAST_DAYS_CACHED = 10_000;
const DAY_MS = 86_400_000;

export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

const emptyDay = (day: string): UsageDay => ({
  day,
  runs: 0,
  turns: 0,
  tokens: 0,
  costUsd: 0,
  toolSeconds: 0,
});

export class TenantUsage {
  /** Past days' totals by `tenant/day`; concurrent reads of one share its listing. */
  private readonly pastDays: BoundedCache<string, UsageDay>;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    /** The deployment's S3 prefix, used verbatim. */
    private readonly prefix: string,
    private readonly now: () => number = Date.now,
  ) {
    this.pastDays = new BoundedCache({ capacity: PAST_DAYS_CACHED, ttlMs: PAST_DAY_CACHE_MS, now });
  }

  /** One model turn: at most once per session and entry slot, on the day `atMs` falls on. */
  recordTurn(
    tenantId: string,
    turn: { sessionId: string; slotSeq: number; atMs: number; tokens: number; costUsd: number },
  ): Promise<void> {
    const micro = Math.round(turn.costUsd * 1e6);
    return this.put(
      tenantId,
      turn.atMs,
      `turn~${turn.sessionId}~${turn.slotSeq}~${Math.round(turn.tokens)}~${micro}`,
    );
  }

  /** One run started (once per run id). */
  recordRun(tenantId: string, run: { sessionId: string; runId: string; atMs: number }): Promise<void> {
    return this.put(tenantId, run.atMs, `run~${run.sessionId}~${run.runId}`);
  }

  /** One tool call's duration, by its result's entry slot (recorded once: see execute-tool). */
  recordTool(
    tenantId: string,
    tool: { sessionId: string; slotSeq: number; atMs: number; ms: number },
  ): Promise<void> {
    const ms = Math.max(0, Math.round(tool.ms));
    return this.put(tenantId, tool.atMs, `tool~${tool.sessionId}~${tool.slotSeq}~${ms}`);
  }

  /** Totals of each day from `from` to `to` (YYYY-MM-DD, both included), oldest first. */
  async days(tenantId: string, from: string, to: string): Promise<UsageDay[]> {
    const days: string[] = [];
    for (let ms = Date.parse(`${from}T00:00:00Z`); ms <= Date.parse(`${to}T00:00:00Z`); ms += DAY_MS)
      days.push(dayOf(ms));
    return Promise.all(days.map((day) => this.day(tenantId, day)));
  }

  /** The totals of one day (a past day's from a short cache; today's always listed). */
  day(tenantId: string, day: string): Promise<UsageDay> {
    if (day >= dayOf(this.now())) return this.listDay(tenantId, day);
    return this.pastDays.getOrLoad(`${tenantId}/${day}`, () => this.listDay(tenantId, day));
  }

  /** A day's totals from the LIST of its records. */
  private async listDay(tenantId: string, day: string): Promise<UsageDay> {
    const totals = emptyDay(day);
    const folder = this.folder(tenantId, day);
    for await (const object of listObjects(this.s3, { Bucket: this.bucket, Prefix: folder })) {
      const [kind, , , a, b] = (object.Key ?? "")
        .slice(folder.length)
        .replace(/\.json$/, "")
        .split("~");
      if (kind === "turn") {
        totals.turns += 1;
        totals.tokens += Number(a) || 0;
        totals.costUsd += (Number(b) || 0) / 1e6;
      } else if (kind === "run") totals.runs += 1;
      else if (kind === "tool") totals.toolSeconds += (Number(a) || 0) / 1000;
    }
    totals.costUsd = Math.round(totals.costUsd * 1e6) / 1e6;
    return totals;
  }

  private async put(tenantId: string, atMs: number, name: string): Promise<void> {
    await this.s3.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: `${this.folder(tenantId, dayOf(atMs))}${name}.json`,
        Body: "{}",
        ContentType: "application/json",
      }),
    );
  }

  private folder(tenantId: string, day: string): string {
    assertValidId("tenant", tenantId);
    return `${this.prefix}tenants/${tenantId}/usage/${day}/`;
  }
}

/** Whether a tenant's token or cost quota for the day or month is used up, and which. */
export interface TenantBudgetState {
  /** The first quota reached (tokens before cost, day before month); undefined: none. */
  reached?: QuotaName;
  today: UsageDay;
  month: { tokens: number; costUsd: number };
  /** Seconds until the reached quota's period ends (next UTC day or month). */
  resetsInSeconds?: number;
}

/**
 * The tenant's token and cost budget now: today's and this month's usage against `quotas`. Costs
 * LIST requests for each day of the month so far (past days cached briefly). For callers that
 * decide whether a tenant may go on (the API's admission; a run reaching its tenant's budget).
 */
export async function tenantBudgetState(
  usage: TenantUsage,
  tenantId: string,
  quotas: Quotas,
  now: number = Date.now(),
): Promise<TenantBudgetState> {
  const today = dayOf(now);
  const monthStart = `${today.slice(0, 8)}01`;
  const needsMonth = quotas.tokensPerMonth !== undefined || quotas.costPerMonthUsd !== undefined;
  const days = needsMonth
    ? await usage.days(tenantId, monthStart, today)
    : [await usage.day(tenantId, today)];
  const todayTotals = days.at(-1) ?? emptyDay(today);
  const month = {
    tokens: days.reduce((sum, day) => sum + day.tokens, 0),
    costUsd: days.reduce((sum, day) => sum + day.costUsd, 0),
  };
  const date = new Date(now);
  const nextDay = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
  const nextMonth = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
  const checks: [QuotaName, number | undefined, number, number][] = [
    ["tokensPerDay", quotas.tokensPerDay, todayTotals.tokens, nextDay],
    ["costPerDayUsd", quotas.costPerDayUsd, todayTotals.costUsd, nextDay],
    ["tokensPerMonth", quotas.tokensPerMonth, month.tokens, nextMonth],
    ["costPerMonthUsd", quotas.costPerMonthUsd, month.costUsd, nextMonth],
  ];
  const reached = checks.find(([, limit, used]) => limit !== undefined && used >= limit);
  return {
    today: todayTotals,
    month,
    ...(reached
      ? { reached: reached[0], resetsInSeconds: Math.max(1, Math.ceil((reached[3] - now) / 1000)) }
      : {}),
  };
}
