/**
 * A tenant's token and cost budget as the workers see it between turns (docs/api.md, "Budgets
 * that pause"): the API refuses new runs of a tenant over its quotas `tokensPerDay`,
 * `costPerDayUsd`, `tokensPerMonth` or `costPerMonthUsd`; a run already going pauses at its next
 * turn boundary, and goes on once the tenant is under budget again (the operator raised the quota,
 * or a new UTC day or month began).
 *
 * After each model call the worker asks `reached(tenantId)`, answered from a short per-process
 * cache (`cacheMs`): a busy tenant's usage is listed once per interval, not once per turn, so a
 * run may take the turns of that interval past the budget. A paused run asks again with
 * `fresh: true` every `recheckAfterMs`, and at once when someone resumes it.
 */
import type { TenantBudgetHold } from "../contracts/pause";
import { BoundedCache } from "../core/bounded-cache";
import type { TenantStore } from "./store";
import type { QuotaName, Quotas } from "./types";
import { type TenantBudgetState, type TenantUsage, tenantBudgetState } from "./usage";

/** How long one answer is reused for a tenant by default (ms). */
const DEFAULT_TENANT_BUDGET_CACHE_MS = 10_000;
/** How often a paused run asks again by default (ms): KEEL_TENANT_BUDGET_RECHECK_SECONDS. */
export const DEFAULT_TENANT_BUDGET_RECHECK_MS = 300_000;
/** Tenants whose answers are cached at once; the oldest is dropped beyond it. */
const CACHED_TENANTS = 1_000;

type BudgetQuota = "tokensPerDay" | "costPerDayUsd" | "tokensPerMonth" | "costPerMonthUsd";

/** Each budget quota: its words, when it resets, and its use in a budget state. */
const BUDGET_QUOTAS: Record<
  BudgetQuota,
  { what: string; until: string; used: (state: TenantBudgetState) => number }
> = {
  tokensPerDay: { what: "daily token budget", until: "the UTC day ends", used: (s) => s.today.tokens },
  costPerDayUsd: { what: "daily cost budget", until: "the UTC day ends", used: (s) => s.today.costUsd },
  tokensPerMonth: { what: "monthly token budget", until: "the UTC month ends", used: (s) => s.month.tokens },
  costPerMonthUsd: { what: "monthly cost budget", until: "the UTC month ends", used: (s) => s.month.costUsd },
};

const isBudgetQuota = (name: QuotaName): name is BudgetQuota => Object.hasOwn(BUDGET_QUOTAS, name);

/** One line saying which of the tenant's budgets is used up and when the run goes on. */
export function describeTenantBudget(budget: BudgetQuota, limit: number, used: number): string {
  const { what, until } = BUDGET_QUOTAS[budget];
  const amounts = budget.startsWith("cost")
    ? `$${limit}; used $${used.toFixed(4)}`
    : `${limit} tokens; used ${used}`;
  return `the tenant's ${what} is used up (${budget} ${amounts}); the run goes on when the operator raises it or ${until}`;
}

export interface TenantBudgetCheckOptions {
  cacheMs?: number;
  recheckAfterMs?: number;
  now?: () => number;
}

export class TenantBudgetCheck {
  /** Answers by tenant; the asks of one tenant at one moment share its reads. */
  private readonly cache: BoundedCache<string, TenantBudgetHold | undefined>;
  private readonly recheckAfterMs: number;
  private readonly now: () => number;

  constructor(
    private readonly store: Pick<TenantStore, "getSettings">,
    private readonly usage: TenantUsage,
    options: TenantBudgetCheckOptions = {},
  ) {
    this.recheckAfterMs = options.recheckAfterMs ?? DEFAULT_TENANT_BUDGET_RECHECK_MS;
    this.now = options.now ?? Date.now;
    this.cache = new BoundedCache({
      capacity: CACHED_TENANTS,
      ttlMs: options.cacheMs ?? DEFAULT_TENANT_BUDGET_CACHE_MS,
      now: this.now,
    });
  }

  /**
   * The tenant budget the tenant has used up, if any; undefined for a tenant without token or cost
   * quotas (one settings read, no usage listed). An answer whose reads began less than `cacheMs`
   * ago is returned unless `fresh`. Throws when the store cannot be read (and keeps no answer).
   */
  reached(tenantId: string, options: { fresh?: boolean } = {}): Promise<TenantBudgetHold | undefined> {
    return this.cache.getOrLoad(tenantId, () => this.read(tenantId), options);
  }

  private async read(tenantId: string): Promise<TenantBudgetHold | undefined> {
    const quotas: Quotas = (await this.store.getSettings(tenantId)).quotas ?? {};
    if (
      !Object.entries(quotas).some(([name, limit]) => limit !== undefined && isBudgetQuota(name as QuotaName))
    )
      return undefined;
    const state = await tenantBudgetState(this.usage, tenantId, quotas, this.now());
    if (state.reached === undefined || !isBudgetQuota(state.reached)) return undefined;
    const limit = quotas[state.reached] ?? 0;
    const used = BUDGET_QUOTAS[state.reached].used(state);
    return {
      budget: state.reached,
      limit,
      used,
      message: describeTenantBudget(state.reached, limit, used),
      recheckAfterMs: this.recheckAfterMs,
    };
  }
}
