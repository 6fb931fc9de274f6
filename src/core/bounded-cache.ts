/**
 * The one in-process cache of every long-lived process (docs/architecture.md, "In-process
 * caches"): bounded in entries (or in a total weight, such as bytes), the least recently used
 * entry dropped first, each entry optionally living only `ttlMs`. `getOrLoad` shares one load
 * among concurrent callers of a key and never keeps a failed load.
 *
 * No clock of its own (src/core): a cache whose entries expire is given one.
 */

export interface BoundedCacheOptions<K> {
  /**
   * The bound: the most entries held or, when `set` weighs them, the most total weight. Past it
   * the least recently used entries are dropped; an entry heavier than the whole bound is not kept.
   * An entry weighs at least 1, so the bound is also one on the number of entries.
   */
  capacity: number;
  /**
   * How long an entry lives (ms), from when it was `set` or its load began: an answer never
   * outlives `ttlMs` from the moment the source was asked. None: until it is dropped for room.
   */
  ttlMs?: number;
  /** The clock `ttlMs` is measured on (ms since the epoch, or any steady count); required with it. */
  now?: () => number;
  /** Called for each entry dropped to make room (not for expired, replaced or deleted ones). */
  onEvict?: (key: K) => void;
}

interface Slot<V> {
  value: V;
  weight: number;
  /** When the entry stops being served (Infinity: never). */
  expires: number;
}

export class BoundedCache<K, V> {
  readonly capacity: number;
  // A Map iterates in insertion order: moving a key to the end on each use keeps the least
  // recently used first.
  private readonly slots = new Map<K, Slot<V>>();
  /**
   * Loads under way, by key: the newest one for a key is the one whose value is kept. Not counted
   * in the bound: each lasts only as long as its load (a request under way).
   */
  private readonly loads = new Map<K, Promise<V>>();
  private totalWeight = 0;
  private readonly ttlMs: number | undefined;
  private readonly now: () => number;
  private readonly onEvict: ((key: K) => void) | undefined;

  constructor(options: BoundedCacheOptions<K>) {
    if (!Number.isSafeInteger(options.capacity) || options.capacity < 0)
      throw new RangeError(`cache capacity must be a non-negative integer, got ${options.capacity}`);
    if (options.ttlMs !== undefined) {
      if (!(options.ttlMs >= 0)) throw new RangeError(`cache ttlMs must be >= 0, got ${options.ttlMs}`);
      if (!options.now) throw new TypeError("a cache whose entries expire needs a clock (`now`)");
    }
    this.capacity = options.capacity;
    this.ttlMs = options.ttlMs;
    // Without ttlMs every entry expires at Infinity and the clock is never read.
    this.now = options.now ?? (() => 0);
    this.onEvict = options.onEvict;
  }

  /** Entries held (expired ones not yet dropped included). */
  get size(): number {
    return this.slots.size;
  }

  /** The sum of the held entries' weights (their number when `set` weighs none). */
  get weight(): number {
    return this.totalWeight;
  }

  /** The live value of `key`, marking it recently used; undefined when absent or expired. */
  get(key: K): V | undefined {
    return this.use(key)?.value;
  }

  /** The live value of `key`, leaving its recency as it is. */
  peek(key: K): V | undefined {
    return this.live(key)?.value;
  }

  /** Whether `key` has a live entry (whose value may be undefined); leaves its recency as it is. */
  has(key: K): boolean {
    return this.live(key) !== undefined;
  }

  /**
   * Stores `value` under `key` as the most recently used, replacing any entry (and keeping no
   * load under way for it); drops the least recently used entries until the bound holds.
   */
  set(key: K, value: V, weight = 1): void {
    this.loads.delete(key);
    this.store(key, value, weight, this.ttlMs === undefined ? Infinity : this.now() + this.ttlMs);
  }

  /**
   * The live value of `key`, or the value of `load()`, which is kept (with weight 1). Callers that
   * ask while a load of the key is under way share it. A load that fails is not kept: its callers
   * get the error, and the next caller loads again. `fresh`: a new load whatever is held (it
   * becomes the one later callers share).
   */
  getOrLoad(key: K, load: () => Promise<V>, options: { fresh?: boolean } = {}): Promise<V> {
    if (!options.fresh) {
      const slot = this.use(key);
      if (slot) return Promise.resolve(slot.value);
      const pending = this.loads.get(key);
      if (pending) return pending;
    }
    const expires = this.ttlMs === undefined ? Infinity : this.now() + this.ttlMs;
    const loading: Promise<V> = (async () => load())().then(
      (value) => {
        // Kept only while it is still the key's newest load: a `set`, `delete` or fresh load
        // since then wins.
        if (this.loads.get(key) === loading) {
          this.loads.delete(key);
          this.store(key, value, 1, expires);
        }
        return value;
      },
      (error: unknown) => {
        if (this.loads.get(key) === loading) this.loads.delete(key);
        throw error;
      },
    );
    this.loads.set(key, loading);
    return loading;
  }

  /** Forgets `key`: its entry, and the value of a load under way for it (its callers still get it). */
  delete(key: K): void {
    this.loads.delete(key);
    this.drop(key);
  }

  /** Forgets every key `matches` (entries and loads under way), such as a deleted session's. */
  deleteWhere(matches: (key: K) => boolean): void {
    for (const key of this.loads.keys()) if (matches(key)) this.loads.delete(key);
    for (const key of this.slots.keys()) if (matches(key)) this.drop(key);
  }

  /** The live slot of `key`, moved to the most recently used end. */
  private use(key: K): Slot<V> | undefined {
    const slot = this.live(key);
    if (slot) {
      this.slots.delete(key);
      this.slots.set(key, slot);
    }
    return slot;
  }

  private live(key: K): Slot<V> | undefined {
    const slot = this.slots.get(key);
    if (!slot) return undefined;
    if (slot.expires !== Infinity && slot.expires <= this.now()) {
      this.drop(key);
      return undefined;
    }
    return slot;
  }

  private store(key: K, value: V, weighed: number, expires: number): void {
    if (!Number.isFinite(weighed) || weighed < 0)
      throw new RangeError(`cache weight must be a non-negative number, got ${weighed}`);
    this.drop(key);
    const weight = Math.max(1, weighed);
    if (weight > this.capacity || (expires !== Infinity && expires <= this.now())) return;
    this.slots.set(key, { value, weight, expires });
    this.totalWeight += weight;
    for (const [oldest, slot] of this.slots) {
      if (this.totalWeight <= this.capacity) break;
      this.slots.delete(oldest);
      this.totalWeight -= slot.weight;
      this.onEvict?.(oldest);
    }
  }

  private drop(key: K): void {
    const slot = this.slots.get(key);
    if (!slot) return;
    this.slots.delete(key);
    this.totalWeight -= slot.weight;
  }
}
