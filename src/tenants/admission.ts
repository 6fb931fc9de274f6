/**
 * Admission of a run start against the tenant's quotas, before anything is started
 * (docs/api.md, "Quotas"):
 *
 * - `concurrentRuns`: N lease objects `tenants/{t}/quota/runs/slot-{i}.json` (i < N), each
 *   naming the session whose run holds it. A start claims a free slot with a conditional write
 *   (create-if-absent, or replace-if-match of a slot it may take over), so concurrent starts on
 *   any number of API instances never hold more than N slots. A slot is free once its session's
 *   run has ended (Temporal's description of the workflow, read from its mutable state, not from
 *   visibility: closed after the claim), or when no run started within `CLAIM_GRACE_MS` of the
 *   claim; a slot held by the same session is taken over (a session has one live run at most).
 * - `runsPerMinute`: a counter `tenants/{t}/quota/rate.json` for the current UTC minute, raised
 *   by compare-and-swap (If-Match), so it never counts past the limit.
 * - tokens and cost per day and month: the tenant's recorded usage (usage.ts), checked before the
 *   start; a run that is admitted may go past the limit (budgets pause runs, elsewhere).
 *
 * A start that did not happen (refused, or the message went to a live run) gives back what it
 * took with `release`.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import type { TenantStore } from "./store";
import type { QuotaName, Quotas } from "./types";

/** How long a fresh claim counts as held even while its run is not visible yet. */
export const CLAIM_GRACE_MS = 30_000;
/** What a client refused for concurrency is told to wait (runs end when they end). */
const CONCURRENCY_RETRY_SECONDS = 5;
/** Compare-and-swap attempts on the rate counter before giving up. */
const RATE_ATTEMPTS = 40;

const SlotSchema = z.object({ sessionId: z.string(), claimedAt: z.number() });
/** A slot's holder: the session and when (ms since the epoch, the API's clock) it claimed it. */
export type SlotClaim = z.infer<typeof SlotSchema>;
const RateSchema = z.object({ minute: z.number(), count: z.number().int() });

/** A start over one of the tenant's quotas: the API answers 429 with `Retry-After`. */
export class QuotaExceededError extends Error {
  constructor(
    readonly quota: QuotaName,
    readonly limit: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`The tenant's quota ${quota} (${limit}) is reached; retry after ${retryAfterSeconds} s.`);
    this.name = "QuotaExceededError";
  }
}

/** What an admitted start holds: given back when the start did not happen. */
export interface Admission {
  release(): Promise<void>;
}

export interface AdmissionOptions {
  store: TenantStore;
  /**
   * Whether a claim still holds its slot: the session's run is live, or it has not started yet
   * (no run closed since the claim) and the claim is younger than CLAIM_GRACE_MS.
   */
  isHeld: (tenantId: string, claim: SlotClaim) => Promise<boolean>;
  /** Checks the token and cost quotas; throws QuotaExceededError. Absent: not checked. */
  checkBudget?: (tenantId: string, quotas: Quotas) => Promise<void>;
  now?: () => number;
}

export class QuotaGate {
  private readonly now: () => number;

  constructor(private readonly options: AdmissionOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Admits a start of `sessionId`'s run under `quotas`, or throws QuotaExceededError having taken
   * nothing. Checks run cheapest first: budgets (reads), then the slot, then the rate counter.
   */
  async admit(tenantId: string, sessionId: string, quotas: Quotas): Promise<Admission> {
    await this.options.checkBudget?.(tenantId, quotas);
    const taken: Admission[] = [];
    try {
      if (quotas.concurrentRuns !== undefined)
        taken.push(await this.claimSlot(tenantId, sessionId, quotas.concurrentRuns));
      if (quotas.runsPerMinute !== undefined)
        taken.push(await this.countStart(tenantId, quotas.runsPerMinute));
    } catch (error) {
      await releaseAll(taken);
      throw error;
    }
    return { release: () => releaseAll(taken) };
  }

  private async claimSlot(tenantId: string, sessionId: string, limit: number): Promise<Admission> {
    const { objects } = this.options.store;
    const keys = Array.from(
      { length: limit },
      (_, i) => `${this.options.store.folder(tenantId)}quota/runs/slot-${i}.json`,
    );
    const slots = await Promise.all(keys.map((key) => objects.readVersioned(key, SlotSchema)));
    const claim: SlotClaim = { sessionId, claimedAt: this.now() };
    // The session's own slot first (it must not hold two), then empty ones, then stale ones.
    const own = slots.flatMap((slot, i) => (slot?.value.sessionId === sessionId ? [i] : []));
    const empty = slots.flatMap((slot, i) => (slot === undefined ? [i] : []));
    const others = slots.flatMap((slot, i) =>
      slot !== undefined && slot.value.sessionId !== sessionId ? [i] : [],
    );
    const claimed = (key: string): Admission => ({
      release: async () => {
        // Marked free rather than deleted: a conditional delete is not portable, and a later
        // claim of the same session has changed the version, so this release then does nothing.
        const current = await objects.readVersioned(key, SlotSchema);
        if (current && current.value.sessionId === sessionId && current.value.claimedAt === claim.claimedAt)
          await objects.replaceIfMatch(key, { sessionId, claimedAt: 0 }, current.etag);
      },
    });
    for (const i of [...own, ...empty, ...others]) {
      const key = keys[i]!;
      const slot = slots[i];
      if (slot === undefined) {
        if (await objects.createIfAbsent(key, claim)) return claimed(key);
        continue;
      }
      const held = slot.value;
      if (held.sessionId !== sessionId && (await this.options.isHeld(tenantId, held))) continue;
      if (await objects.replaceIfMatch(key, claim, slot.etag)) return claimed(key);
    }
    throw new QuotaExceededError("concurrentRuns", limit, CONCURRENCY_RETRY_SECONDS);
  }

  private async countStart(tenantId: string, limit: number): Promise<Admission> {
    const { objects } = this.options.store;
    const key = `${this.options.store.folder(tenantId)}quota/rate.json`;
    const minute = Math.floor(this.now() / 60_000);
    const retryAfter = Math.max(1, Math.ceil(((minute + 1) * 60_000 - this.now()) / 1000));
    const changed = await compareAndSwap(objects, key, (current) => {
      const count = current?.minute === minute ? current.count : 0;
      if (count >= limit) throw new QuotaExceededError("runsPerMinute", limit, retryAfter);
      return { minute, count: count + 1 };
    });
    // Every attempt lost a race to other starts: refused as at the rate limit, to retry shortly.
    if (!changed) throw new QuotaExceededError("runsPerMinute", limit, 1);
    return {
      release: async () => {
        await compareAndSwap(objects, key, (current) =>
          current?.minute === minute && current.count > 0 ? { minute, count: current.count - 1 } : undefined,
        );
      },
    };
  }
}

/**
 * Applies `change` to the counter at `key` by compare-and-swap until it sticks: true when
 * written, false when every attempt lost a race. `change` answering undefined writes nothing.
 */
async function compareAndSwap(
  objects: TenantStore["objects"],
  key: string,
  change: (current: z.infer<typeof RateSchema> | undefined) => z.infer<typeof RateSchema> | undefined,
): Promise<boolean> {
  for (let attempt = 0; attempt < RATE_ATTEMPTS; attempt++) {
    const current = await objects.readVersioned(key, RateSchema);
    const next = change(current?.value);
    if (next === undefined) return true;
    const written = current
      ? await objects.replaceIfMatch(key, next, current.etag)
      : await objects.createIfAbsent(key, next);
    if (written) return true;
    await sleep(5 + Math.random() * 20 * Math.min(attempt + 1, 5));
  }
  return false;
}

async function releaseAll(taken: readonly Admission[]): Promise<void> {
  await Promise.all(taken.map((admission) => admission.release()));
}
