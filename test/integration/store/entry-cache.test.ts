// Pure tests of the immutable-object cache (no server needed).
import { DEFAULT_CACHE_MAX_BYTES, EntryCache } from "../../../src/store/entry-cache";

describe("EntryCache", () => {
  test("counts hits and misses", () => {
    const cache = new EntryCache();
    expect(cache.get("a")).toBeUndefined();
    cache.set("a", { v: 1 }, 10);
    expect(cache.get("a")).toEqual({ v: 1 });
    expect(cache.stats()).toMatchObject({ hits: 1, misses: 1, objects: 1, bytes: 10 });
    expect(cache.stats().maxBytes).toBe(DEFAULT_CACHE_MAX_BYTES);
  });

  test("evicts the least recently used objects to stay within the byte bound", () => {
    const cache = new EntryCache({ maxBytes: 30 });
    cache.set("a", "A", 10);
    cache.set("b", "B", 10);
    cache.set("c", "C", 10);
    cache.get("a"); // a is now the most recently used
    cache.set("d", "D", 10);
    expect(cache.has("b")).toBe(false);
    expect(["a", "c", "d"].every((key) => cache.has(key))).toBe(true);
    expect(cache.stats()).toMatchObject({ bytes: 30, objects: 3, evictions: 1 });
    cache.set("big", "X", 25);
    expect(cache.stats().bytes).toBeLessThanOrEqual(30);
    expect(cache.has("big")).toBe(true);
  });

  test("an object larger than the whole cache is not stored", () => {
    const cache = new EntryCache({ maxBytes: 5 });
    cache.set("huge", "x", 6);
    expect(cache.has("huge")).toBe(false);
    expect(cache.stats().bytes).toBe(0);
  });

  test("setting a key again replaces its size, not adds to it", () => {
    const cache = new EntryCache({ maxBytes: 100 });
    cache.set("a", 1, 40);
    cache.set("a", 1, 40);
    expect(cache.stats()).toMatchObject({ bytes: 40, objects: 1 });
  });

  test("rejects a negative bound", () => {
    expect(() => new EntryCache({ maxBytes: -1 })).toThrow(RangeError);
  });
});
