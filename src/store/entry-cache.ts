/**
 * Worker-local LRU cache of immutable S3 objects (entries, chunks, headers), keyed by S3 key and
 * bounded by the total size of the cached objects. The objects it holds are never overwritten in
 * S3 (conditional creates only), so nothing is ever invalidated: a key's value is final.
 */

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

interface Slot {
  value: unknown;
  bytes: number;
}

export class EntryCache {
  readonly maxBytes: number;
  // A Map iterates in insertion order; re-inserting on every hit keeps the least recently used
  // key first.
  private readonly slots = new Map<string, Slot>();
  private totalBytes = 0;
  private hitCount = 0;
  private missCount = 0;
  private evictionCount = 0;

  constructor(options: EntryCacheOptions = {}) {
    const maxBytes = options.maxBytes ?? DEFAULT_CACHE_MAX_BYTES;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new RangeError(`cache maxBytes must be a non-negative integer, got ${maxBytes}`);
    }
    this.maxBytes = maxBytes;
  }

  /** The value stored for `key`, counting a hit or a miss and marking it recently used. */
  get<T>(key: string): T | undefined {
    const slot = this.slots.get(key);
    if (!slot) {
      this.missCount++;
      return undefined;
    }
    this.hitCount++;
    this.slots.delete(key);
    this.slots.set(key, slot);
    return slot.value as T;
  }

  /** Whether `key` is cached; counts nothing and does not change the recency order. */
  has(key: string): boolean {
    return this.slots.has(key);
  }

  /**
   * Stores the immutable object read from or written to `key`; `bytes` is its size in S3.
   * An object larger than the whole cache is not stored. Least recently used objects are evicted
   * until the total fits.
   */
  set(key: string, value: unknown, bytes: number): void {
    const previous = this.slots.get(key);
    if (previous) {
      this.slots.delete(key);
      this.totalBytes -= previous.bytes;
    }
    if (bytes > this.maxBytes) return;
    this.slots.set(key, { value, bytes });
    this.totalBytes += bytes;
    for (const [oldest, slot] of this.slots) {
      if (this.totalBytes <= this.maxBytes) break;
      this.slots.delete(oldest);
      this.totalBytes -= slot.bytes;
      this.evictionCount++;
    }
  }

  /** Forgets every object whose key starts with `prefix` (a deleted session's folder). */
  dropPrefix(prefix: string): void {
    for (const [key, slot] of this.slots) {
      if (!key.startsWith(prefix)) continue;
      this.slots.delete(key);
      this.totalBytes -= slot.bytes;
    }
  }

  stats(): EntryCacheStats {
    return {
      hits: this.hitCount,
      misses: this.missCount,
      objects: this.slots.size,
      bytes: this.totalBytes,
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
