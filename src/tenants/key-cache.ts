/**
 * Resolves presented API keys against the tenant store, with a short cache: a key created or
 * revoked through the admin API takes effect on every API instance within `KEY_CACHE_SECONDS`
 * (each instance caches an answer, known or unknown, for at most that long). The same cache
 * serves other lookups that must follow the admin API within seconds (Slack teams).
 */
import { BoundedCache } from "../core/bounded-cache";
import type { TenantStore } from "./store";

/** The bound on how long a revoked key keeps working on an instance that saw it (docs/api.md). */
export const KEY_CACHE_SECONDS = 5;
/** Most entries remembered: presenting many random keys cannot grow the cache without bound. */
const MAX_ENTRIES = 10_000;

/**
 * Answers of a slow lookup remembered for `ttlMs` from when the lookup began, found or not, the
 * least recently used dropped past `MAX_ENTRIES`. Concurrent lookups of one key share one load; a
 * failed load is not kept (the error goes to its callers).
 */
export function shortCache<T>(
  ttlMs = KEY_CACHE_SECONDS * 1000,
  now: () => number = Date.now,
): BoundedCache<string, T> {
  return new BoundedCache({ capacity: MAX_ENTRIES, ttlMs, now });
}

export class KeyResolver {
  private readonly cache: BoundedCache<string, string | undefined>;

  constructor(
    private readonly store: TenantStore,
    ttlMs = KEY_CACHE_SECONDS * 1000,
    now: () => number = Date.now,
  ) {
    this.cache = shortCache(ttlMs, now);
  }

  /** The tenant of a key digest, or undefined (unknown or revoked). */
  tenantOf(digest: string): Promise<string | undefined> {
    return this.cache.getOrLoad(digest, () => this.store.tenantOfDigest(digest));
  }
}
