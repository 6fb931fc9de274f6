/**
 * Resolves presented API keys against the tenant store, with a short cache: a key created or
 * revoked through the admin API takes effect on every API instance within `KEY_CACHE_SECONDS`
 * (each instance caches an answer, known or unknown, for at most that long). The same cache
 * serves other lookups that must follow the admin API within seconds (Slack teams).
 */
import type { TenantStore } from "./store";

/** The bound on how long a revoked key keeps working on an instance that saw it (docs/api.md). */
export const KEY_CACHE_SECONDS = 5;
/** Most entries remembered: presenting many random keys cannot grow the cache without bound. */
const MAX_ENTRIES = 10_000;

interface Entry<T> {
  value: Promise<T>;
  expires: number;
}

/**
 * Answers of a slow lookup remembered for `ttlMs`, found or not. Concurrent lookups of one key
 * share one load; a failed load is not cached (the error goes to the caller).
 */
export class ShortCache<T> {
  private readonly cache = new Map<string, Entry<T>>();

  constructor(
    private readonly ttlMs = KEY_CACHE_SECONDS * 1000,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string, load: () => Promise<T>): Promise<T> {
    const now = this.now();
    const cached = this.cache.get(key);
    if (cached && cached.expires > now) return cached.value;
    this.cache.delete(key);
    if (this.cache.size >= MAX_ENTRIES) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    const value = load();
    this.cache.set(key, { value, expires: now + this.ttlMs });
    value.catch(() => {
      if (this.cache.get(key)?.value === value) this.cache.delete(key);
    });
    return value;
  }
}

export class KeyResolver {
  private readonly cache: ShortCache<string | undefined>;

  constructor(
    private readonly store: TenantStore,
    ttlMs = KEY_CACHE_SECONDS * 1000,
    now: () => number = Date.now,
  ) {
    this.cache = new ShortCache(ttlMs, now);
  }

  /** The tenant of a key digest, or undefined (unknown or revoked). */
  tenantOf(digest: string): Promise<string | undefined> {
    return this.cache.get(digest, () => this.store.tenantOfDigest(digest));
  }
}
