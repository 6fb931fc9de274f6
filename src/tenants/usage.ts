/**
 * Usage per tenant per UTC day (docs/api.md, "Usage"): runs started, model calls (tokens, cost)
 * and tool seconds, kept in a ledger per tenant and UTC month (usage-ledger.ts: a fixed number of
 * GETs to read, a compare-and-swap on one of its shards to add to).
 *
 * Records that arrive while a write of their ledger is in flight wait and go together in the next
 * one: under load a process writes each tenant's ledger once per round trip, whatever the number
 * of calls, tool calls and starts in between. Reads of the current month go to S3 every time (an
 * admission must see the latest); a past month's are cached briefly.
 *
 * Each record is counted once by its caller's rule, not here: a run when its start was
 * delivered, a model call by the attempt that made it, a tool call by the attempt that stored
 * its result. A record's promise settles when its write did: the caller decides whether a failure
 * matters (all of them log it and go on).
 *
 * Tool seconds may wait (`toolSecondsWaitMs`, a worker's choice): they are not written at once
 * but join the ledger's next write — in a run, the next model call's record — or a write of their
 * own after the wait; their promise settles at once. A process killed meanwhile loses them (the
 * same loss as dying between storing a result and recording it); one that stops calls
 * `stopWaiting` first.
 */

import type { S3Client } from "@aws-sdk/client-s3";
import { BoundedCache } from "../core/bounded-cache";
import type { QuotaName, Quotas } from "./types";
import { addTotals, type DayTotals, dayOf, type Ledger, noTotals, UsageLedgers } from "./usage-ledger";

export { dayOf } from "./usage-ledger";

export interface UsageDay {
  /** YYYY-MM-DD (UTC). */
  day: string;
  runs: number;
  turns: number;
  tokens: number;
  costUsd: number;
  toolSeconds: number;
}

/** Records waiting for the next write of one ledger, and the callers waiting on it. */
interface PendingWrite {
  tenantId: string;
  month: string;
  days: Map<string, DayTotals>;
  settle: { resolve: () => void; reject: (error: unknown) => void }[];
}

export interface TenantUsageOptions {
  now?: () => number;
  /** How long tool seconds may wait for the ledger's next write (ms); 0 (default): written at once. */
  toolSecondsWaitMs?: number;
  /** Told when a write of records nobody waits for failed (they are lost). */
  warn?: (message: string, fields: Record<string, unknown>) => void;
}

/** A worker's wait for tool seconds: longer than a model call's usual answer, short to lose. */
export const WORKER_TOOL_SECONDS_WAIT_MS = 2_000;

/** How long the totals of a past month are reused (a late record of that month shows after this). */
const PAST_MONTH_CACHE_MS = 60_000;
/** Past months (a tenant's, each) whose ledgers are kept: a year's for some 800 busy tenants. */
const PAST_MONTHS_CACHED = 10_000;
const DAY_MS = 86_400_000;

function usageDay(day: string, totals: DayTotals = noTotals()): UsageDay {
  return {
    day,
    runs: totals.runs,
    turns: totals.turns,
    tokens: totals.tokens,
    costUsd: totals.costMicroUsd / 1e6,
    toolSeconds: totals.toolMs / 1000,
  };
}

export class TenantUsage {
  private readonly ledgers: UsageLedgers;
  /** Past months' ledgers by key; concurrent reads of one share its GETs. */
  private readonly pastMonths: BoundedCache<string, Ledger>;
  /** Records waiting, by ledger key, while a write of that ledger is in flight. */
  private readonly pending = new Map<string, PendingWrite>();
  /** The ledgers being written now (one write each at a time). */
  private readonly writing = new Set<string>();
  /** The ledgers whose waiting tool seconds get a write of their own when the wait ends. */
  private readonly waitTimers = new Map<string, NodeJS.Timeout>();
  /** The write under way of each ledger being written. */
  private readonly done = new Map<string, Promise<void>>();
  private readonly now: () => number;
  private toolSecondsWaitMs: number;
  private readonly warn: NonNullable<TenantUsageOptions["warn"]>;

  constructor(
    s3: S3Client,
    bucket: string,
    /** The deployment's S3 prefix, used verbatim. */
    prefix: string,
    options: TenantUsageOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.toolSecondsWaitMs = options.toolSecondsWaitMs ?? 0;
    this.warn = options.warn ?? (() => {});
    this.ledgers = new UsageLedgers(s3, bucket, prefix);
    this.pastMonths = new BoundedCache({
      capacity: PAST_MONTHS_CACHED,
      ttlMs: PAST_MONTH_CACHE_MS,
      now: this.now,
    });
  }

  /**
   * From now on every record is written at once, and those waiting are written now (a process
   * about to stop). Resolves when they are written or given up.
   */
  async stopWaiting(): Promise<void> {
    this.toolSecondsWaitMs = 0;
    const waiting = [...this.waitTimers.keys()];
    for (const key of waiting) this.startWriting(key);
    await Promise.all(waiting.map((key) => this.idle(key)));
  }

  /** One model turn whose answer this attempt stored, on the day `atMs` falls on. */
  recordTurn(tenantId: string, turn: { atMs: number; tokens: number; costUsd: number }): Promise<void> {
    return this.add(tenantId, turn.atMs, {
      turns: 1,
      tokens: Math.max(0, Math.round(turn.tokens)),
      costMicroUsd: Math.max(0, Math.round(turn.costUsd * 1e6)),
    });
  }

  /** One run started. */
  recordRun(tenantId: string, run: { atMs: number }): Promise<void> {
    return this.add(tenantId, run.atMs, { runs: 1 });
  }

  /** One tool call's duration, once its result is stored (it may wait: see the module comment). */
  recordTool(tenantId: string, tool: { atMs: number; ms: number }): Promise<void> {
    const totals = { toolMs: Math.max(0, Math.round(tool.ms)) };
    if (this.toolSecondsWaitMs <= 0) return this.add(tenantId, tool.atMs, totals);
    const { key } = this.enqueue(tenantId, tool.atMs, totals);
    if (!this.writing.has(key) && !this.waitTimers.has(key)) {
      const timer = setTimeout(() => this.startWriting(key), this.toolSecondsWaitMs);
      // A process that ends without stopWaiting loses them, as one killed would.
      timer.unref();
      this.waitTimers.set(key, timer);
    }
    return Promise.resolve();
  }

  /** Totals of each day from `from` to `to` (YYYY-MM-DD, both included), oldest first. */
  async days(tenantId: string, from: string, to: string): Promise<UsageDay[]> {
    const days: string[] = [];
    for (let ms = Date.parse(`${from}T00:00:00Z`); ms <= Date.parse(`${to}T00:00:00Z`); ms += DAY_MS)
      days.push(dayOf(ms));
    const months = [...new Set(days.map((day) => day.slice(0, 7)))];
    const ledgers = new Map(
      await Promise.all(months.map(async (month) => [month, await this.month(tenantId, month)] as const)),
    );
    return days.map((day) => usageDay(day, ledgers.get(day.slice(0, 7))?.days[day]));
  }

  /** The totals of one day. */
  async day(tenantId: string, day: string): Promise<UsageDay> {
    return usageDay(day, (await this.month(tenantId, day.slice(0, 7))).days[day]);
  }

  /**
   * A month's ledger (YYYY-MM): the current month's read on every call, a past
   * month's from a short cache.
   */
  async month(tenantId: string, month: string): Promise<Ledger> {
    const current = dayOf(this.now()).slice(0, 7);
    // Nothing is recorded ahead of the clock: no ledger is made for a month still to come.
    if (month > current) return { days: {}, writes: [] };
    const read = () => this.ledgers.read(tenantId, month);
    if (month === current) return read();
    return this.pastMonths.getOrLoad(this.ledgers.ledgerKey(tenantId, month), read);
  }

  /**
   * Adds `totals` to the day `atMs` falls on: joins the ledger's next write, and starts it unless
   * one is in flight (that one's end starts it). Settles when the write holding it did.
   */
  private add(tenantId: string, atMs: number, totals: Partial<DayTotals>): Promise<void> {
    const { key, pending } = this.enqueue(tenantId, atMs, totals);
    const settled = new Promise<void>((resolve, reject) => pending.settle.push({ resolve, reject }));
    this.startWriting(key);
    return settled;
  }

  /** Adds `totals` to the pending records of the ledger of `atMs`'s month. */
  private enqueue(
    tenantId: string,
    atMs: number,
    totals: Partial<DayTotals>,
  ): { key: string; pending: PendingWrite } {
    const day = dayOf(atMs);
    const month = day.slice(0, 7);
    const key = this.ledgers.ledgerKey(tenantId, month);
    let pending = this.pending.get(key);
    if (!pending) {
      pending = { tenantId, month, days: new Map(), settle: [] };
      this.pending.set(key, pending);
    }
    const sum = pending.days.get(day) ?? noTotals();
    addTotals(sum, totals);
    pending.days.set(day, sum);
    return { key, pending };
  }

  /** Starts writing the ledger's pending records, unless a write of it is in flight (its end will). */
  private startWriting(key: string): void {
    clearTimeout(this.waitTimers.get(key));
    this.waitTimers.delete(key);
    if (this.writing.has(key) || !this.pending.has(key)) return;
    this.writing.add(key);
    this.done.set(key, this.writeWhilePending(key));
  }

  /** Resolves once no write of the ledger is in flight. */
  private async idle(key: string): Promise<void> {
    for (let write = this.done.get(key); write; write = this.done.get(key)) await write;
  }

  /** Writes the ledger's pending records, then those that came meanwhile, until none wait. */
  private async writeWhilePending(key: string): Promise<void> {
    try {
      for (let batch = this.pending.get(key); batch; batch = this.pending.get(key)) {
        this.pending.delete(key);
        const { tenantId, month } = batch;
        try {
          await this.ledgers.add(tenantId, month, batch.days);
          for (const waiter of batch.settle) waiter.resolve();
        } catch (error) {
          for (const waiter of batch.settle) waiter.reject(error);
          if (batch.settle.length === 0)
            this.warn("tool seconds were not recorded in the tenant's usage", {
              tenantId,
              error: error instanceof Error ? error.message : String(error),
            });
        }
      }
    } finally {
      this.writing.delete(key);
      this.done.delete(key);
    }
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
 * The tenant's token and cost budget now: today's and this month's usage against `quotas`, from
 * one read of the month's ledger. For callers that decide whether a tenant may go on (the API's
 * admission; a run reaching its tenant's budget).
 */
export async function tenantBudgetState(
  usage: TenantUsage,
  tenantId: string,
  quotas: Quotas,
  now: number = Date.now(),
): Promise<TenantBudgetState> {
  const today = dayOf(now);
  const ledger = await usage.month(tenantId, today.slice(0, 7));
  const todayTotals = usageDay(today, ledger.days[today]);
  const monthTotals = noTotals();
  for (const totals of Object.values(ledger.days)) addTotals(monthTotals, totals);
  const month = { tokens: monthTotals.tokens, costUsd: monthTotals.costMicroUsd / 1e6 };
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
