/**
 * The one in-process cache: its bound and eviction order, weights, time to live on an injected
 * clock, single-flight loads, failures not kept, and what `delete` and `fresh` do to a load under way.
 */
import { BoundedCache } from "../../../src/core/bounded-cache";

/** A promise settled from outside, to hold a load under way. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

describe("bound and eviction order", () => {
  test("past its capacity the least recently used entry goes first; a read counts as a use", () => {
    const evicted: string[] = [];
    const cache = new BoundedCache<string, number>({ capacity: 3, onEvict: (key) => evicted.push(key) });
    cache.set("a", 1);
    cache.set("b", 2);
    cache.set("c", 3);
    expect(cache.get("a")).toBe(1);
    cache.set("d", 4);
    expect(evicted).toEqual(["b"]);
    cache.set("e", 5);
    expect(evicted).toEqual(["b", "c"]);
    expect([..."abcde"].filter((key) => cache.has(key))).toEqual(["a", "d", "e"]);
    expect(cache.size).toBe(3);
  });

  test("peek and has leave the order as it is; setting a key again moves it to the end", () => {
    const cache = new BoundedCache<string, number>({ capacity: 2 });
    cache.set("a", 1);
    cache.set("b", 2);
    expect(cache.peek("a")).toBe(1);
    expect(cache.has("a")).toBe(true);
    cache.set("c", 3);
    expect(cache.has("a")).toBe(false);
    cache.set("b", 20);
    cache.set("d", 4);
    expect(cache.peek("b")).toBe(20);
    expect(cache.has("c")).toBe(false);
  });

  test("weighed entries: the bound is on their total weight, and one heavier than it is not kept", () => {
    const evicted: string[] = [];
    const cache = new BoundedCache<string, string>({ capacity: 30, onEvict: (key) => evicted.push(key) });
    cache.set("a", "A", 10);
    cache.set("b", "B", 10);
    cache.set("a", "A", 10);
    expect(cache.weight).toBe(20);
    cache.set("c", "C", 25);
    expect(evicted).toEqual(["b", "a"]);
    expect(cache.weight).toBe(25);
    cache.set("c", "big", 31);
    expect(cache.has("c")).toBe(false);
    expect(cache.weight).toBe(0);
  });

  test("an entry weighs at least 1: weightless entries are still bounded in number", () => {
    const cache = new BoundedCache<number, number>({ capacity: 2 });
    for (let key = 0; key < 5; key++) cache.set(key, key, 0);
    expect(cache.size).toBe(2);
  });

  test("refuses a bound that is not a non-negative integer, and a time to live without a clock", () => {
    expect(() => new BoundedCache({ capacity: -1 })).toThrow(RangeError);
    expect(() => new BoundedCache({ capacity: 1.5 })).toThrow(RangeError);
    expect(() => new BoundedCache({ capacity: 1, ttlMs: 10 })).toThrow(/clock/);
    expect(() => new BoundedCache({ capacity: 1, ttlMs: -1, now: () => 0 })).toThrow(RangeError);
  });
});

describe("time to live", () => {
  test("an entry is served until ttlMs after it was set, then is gone", () => {
    let now = 1_000;
    const cache = new BoundedCache<string, string>({ capacity: 10, ttlMs: 100, now: () => now });
    cache.set("a", "A");
    now += 99;
    expect(cache.get("a")).toBe("A");
    now += 1;
    expect(cache.get("a")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test("a use does not lengthen an entry's life", () => {
    let now = 0;
    const cache = new BoundedCache<string, string>({ capacity: 10, ttlMs: 100, now: () => now });
    cache.set("a", "A");
    now = 90;
    expect(cache.get("a")).toBe("A");
    now = 100;
    expect(cache.peek("a")).toBeUndefined();
  });

  /** A cache of 100 ms entries whose load of "k" begins at 0 and ends (with "v") at `endsAt`. */
  async function loadEndingAt(endsAt: number) {
    const clock = { now: 0 };
    const cache = new BoundedCache<string, string>({ capacity: 10, ttlMs: 100, now: () => clock.now });
    const source = deferred<string>();
    const loading = cache.getOrLoad("k", () => source.promise);
    clock.now = endsAt;
    source.resolve("v");
    expect(await loading).toBe("v");
    return { cache, clock };
  }

  test("a loaded value lives ttlMs from when its load began, not from when it ended", async () => {
    const { cache, clock } = await loadEndingAt(60);
    clock.now = 99;
    expect(cache.get("k")).toBe("v");
    clock.now = 100;
    expect(cache.get("k")).toBeUndefined();
  });

  test("a load that outlasts ttlMs is handed to its callers but not kept", async () => {
    const { cache } = await loadEndingAt(150);
    expect(cache.has("k")).toBe(false);
  });
});

describe("getOrLoad", () => {
  test("concurrent callers of a key share one load; later callers get the kept value", async () => {
    const cache = new BoundedCache<string, number>({ capacity: 10 });
    let loads = 0;
    const source = deferred<number>();
    const load = () => {
      loads++;
      return source.promise;
    };
    const first = cache.getOrLoad("k", load);
    const second = cache.getOrLoad("k", load);
    const other = cache.getOrLoad("other", async () => 7);
    source.resolve(42);
    expect(await Promise.all([first, second, other])).toEqual([42, 42, 7]);
    expect(await cache.getOrLoad("k", load)).toBe(42);
    expect(loads).toBe(1);
  });

  test("an undefined answer is kept like any other", async () => {
    const cache = new BoundedCache<string, string | undefined>({ capacity: 10 });
    let loads = 0;
    const load = async () => {
      loads++;
      return undefined;
    };
    expect(await cache.getOrLoad("unknown", load)).toBeUndefined();
    expect(await cache.getOrLoad("unknown", load)).toBeUndefined();
    expect(loads).toBe(1);
    expect(cache.has("unknown")).toBe(true);
  });

  test("a failed load reaches every caller sharing it and is not kept: the next caller loads again", async () => {
    const cache = new BoundedCache<string, number>({ capacity: 10 });
    const source = deferred<number>();
    const first = cache.getOrLoad("k", () => source.promise);
    const second = cache.getOrLoad("k", () => Promise.resolve(0));
    source.reject(new Error("S3 down"));
    await expect(first).rejects.toThrow("S3 down");
    await expect(second).rejects.toThrow("S3 down");
    expect(cache.has("k")).toBe(false);
    expect(await cache.getOrLoad("k", async () => 5)).toBe(5);
  });

  test("a load that throws before it returns a promise fails like one that rejects", async () => {
    const cache = new BoundedCache<string, number>({ capacity: 10 });
    await expect(
      cache.getOrLoad("k", () => {
        throw new Error("no client");
      }),
    ).rejects.toThrow("no client");
    expect(await cache.getOrLoad("k", async () => 1)).toBe(1);
  });

  test("fresh: a new load whatever is held, whose value replaces the held one", async () => {
    const cache = new BoundedCache<string, number>({ capacity: 10 });
    await cache.getOrLoad("k", async () => 1);
    expect(await cache.getOrLoad("k", async () => 2, { fresh: true })).toBe(2);
    expect(cache.get("k")).toBe(2);
  });

  test("a fresh load under way wins over an older one that ends after it", async () => {
    const cache = new BoundedCache<string, string>({ capacity: 10 });
    const older = deferred<string>();
    const olderLoad = cache.getOrLoad("k", () => older.promise);
    const newer = cache.getOrLoad("k", async () => "new", { fresh: true });
    expect(await newer).toBe("new");
    older.resolve("old");
    expect(await olderLoad).toBe("old");
    expect(cache.get("k")).toBe("new");
  });

  test("delete while a load is under way: its callers get the value, the cache does not keep it", async () => {
    const cache = new BoundedCache<string, string>({ capacity: 10 });
    const source = deferred<string>();
    const loading = cache.getOrLoad("k", () => source.promise);
    cache.delete("k");
    source.resolve("read before the delete");
    expect(await loading).toBe("read before the delete");
    expect(cache.has("k")).toBe(false);
  });

  test("set while a load is under way: the set value stands", async () => {
    const cache = new BoundedCache<string, string>({ capacity: 10 });
    const source = deferred<string>();
    const loading = cache.getOrLoad("k", () => source.promise);
    cache.set("k", "written");
    source.resolve("read");
    await loading;
    expect(cache.get("k")).toBe("written");
  });
});

test("deleteWhere forgets the matching entries and loads under way, and only those", async () => {
  const cache = new BoundedCache<string, number>({ capacity: 10, onEvict: () => fail("not an eviction") });
  cache.set("s1/a", 1, 3);
  cache.set("s1/b", 2, 3);
  cache.set("s2/a", 3, 3);
  const source = deferred<number>();
  const loading = cache.getOrLoad("s1/c", () => source.promise);
  cache.deleteWhere((key) => key.startsWith("s1/"));
  source.resolve(4);
  await loading;
  expect(["s1/a", "s1/b", "s1/c", "s2/a"].filter((key) => cache.has(key))).toEqual(["s2/a"]);
  expect(cache.weight).toBe(3);
});
