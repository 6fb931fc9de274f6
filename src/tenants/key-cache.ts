/**
 * Resolves presented API keys against the tenant store, with a short cache: a key created or
 * revoked through the admin API takes effect on every API instance within `KEY_CACHE_SECONDS`
 * (each instance caches an answer, known or unknown, for at most that long).
 */
import type { TenantStore } from "./store";

/** The bound on how long a revoked key keeps working on an instance that saw it (docs/api.md). */
export const KEY_CACHE_SECONDS = 5;
/** Most digests remembered: presenting many random keys cannot grow the cache without bound. */
const MAX_ENTRIES = 10_000;

interface Entry {
  tenantId: Promise<string | undefined>;
  expires: number;
}

export class KeyResolver {
  private readonly cache = new Map<string, Entry>();

  constructor(
    private readonly store: TenantStore,
    private readonly ttlMs = KEY_CACHE_SECONDS * 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The tenant of a key digest, or undefined (unknown or revoked). Concurrent lookups of one
   * digest share one read; a failed read is not cached (the error goes to the caller).
   */
  tenantOf(digest: string): Promise<string | undefined> {
    const now = this.now();
    const cached = this.cache.get(digest);
    if (cached && cached.expires > now) return cached.tenantId;
    this.cache.delete(digest);
    if (this.cache.size >= MAX_ENTRIES) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    const tenantId = this.store.tenantOfDigest(digest);
    this.cache.set(digest, { tenantId, expires: now + this.ttlMs });
    tenantId.catch(() => {
      if (this.cache.get(digest)?.tenantId === tenantId) this.cache.delete(digest);
    });
    return tenantId;
  }
}
