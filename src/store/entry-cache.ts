/**
 * Worker-local LRU cache of immutable S3 objects (entries, chunks, headers), keyed by S3 key and
 * bounded by the total size of the cached objects. The objects it holds are never overwritten in
 * S3 (conditional creates only), so nothing is ever invalidated: a key's value is final.
 */
import { BoundedCache } from "../core/bounded-cache";

/** Default bound on the bytes held by one cache. */
export const DEFAULT_CACHE_MAX_BYTES = 64 * 1024 * 1024;

export interface EntryCacheOptions {
  /** Upper bound on the sum of the byte sizes of cached objects. */
  maxBytes?: number;
}

export interface EntryCacheStats {
  hits: number;
  misses: number;
  /** Objects currently held. */
  objects: number;
  /** Sum of the byte sizes of the objects currently held. */
  bytes: number;
  maxBytes: number;
  evictions: number;
}

export class EntryCache {
  readonly maxBytes: number;
  private readonly objects: BoundedCache<string, unknown>;
  private hitCount = 0;
  private missCount = 0;
  private evictionCount = 0;

  constructor(options: EntryCacheOptions = {}) {
    // Throws a RangeError for a bound that is not a non-negative integer.
    this.objects = new BoundedCache({
      capacity: options.maxBytes ?? DEFAULT_CACHE_MAX_BYTES,
      onEvict: () => this.evictionCount++,
    });
    this.maxBytes = this.objects.capacity;
  }

  /** The value stored for `key`, counting a hit or a miss and marking it recently used. */
  get<T>(key: string): T | undefined {
    if (!this.objects.has(key)) {
      this.missCount++;
      return undefined;
    }
    this.hitCount++;
    return this.objects.get(key) as T;
  }

  /** Whether `key` is cached; counts nothing and does not change the recency order. */
  has(key: string): boolean {
    return this.objects.has(key);
  }

  /**
   * Stores the immutable object read from or written to `key`; `bytes` is its size in S3.
   * An object larger than the whole cache is not stored. Least recently used objects are evicted
   * until the total fits.
   */
  set(key: string, value: unknown, bytes: number): void {
    this.objects.set(key, value, bytes);
  }

  /** Forgets every object whose key starts with `prefix` (a deleted session's folder). */
  dropPrefix(prefix: string): void {
    this.objects.deleteWhere((key) => key.startsWith(prefix));
  }

  stats(): EntryCacheStats {
    return {
      hits: this.hitCount,
      misses: this.missCount,
      objects: this.objects.size,
      bytes: this.objects.weight,
      maxBytes: this.maxBytes,
      evictions: this.evictionCount,
    };
  }

  /** Resets the hit and miss counters (the cached objects stay). */
  resetCounters(): void {
    this.hitCount = 0;
    this.missCount = 0;
    this.evictionCount = 0;
  }
}
