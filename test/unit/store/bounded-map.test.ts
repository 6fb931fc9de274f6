/** The store's bounded map: results in order, a bound on calls in flight, and its failure contract. */
import { mapWithLimit } from "../../../src/store/bounded-map";

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("results come back in input order with at most `limit` calls in flight", async () => {
  let inFlight = 0;
  let most = 0;
  const results = await mapWithLimit([30, 5, 20, 1, 10, 2], 3, async (ms, index) => {
    inFlight++;
    most = Math.max(most, inFlight);
    await tick(ms);
    inFlight--;
    return `${index}:${ms}`;
  });
  expect(results).toEqual(["0:30", "1:5", "2:20", "3:1", "4:10", "5:2"]);
  expect(most).toBe(3);
});

test("takes any iterable, and an empty one resolves to no results", async () => {
  const doubled = await mapWithLimit(new Set([1, 2, 3]).values(), 2, async (n) => n * 2);
  expect(doubled).toEqual([2, 4, 6]);
  expect(await mapWithLimit([], 4, async () => 1)).toEqual([]);
});

test("rejects with the first failure at once and starts nothing after it", async () => {
  const started: number[] = [];
  const finished: number[] = [];
  const run = mapWithLimit([1, 2, 3, 4, 5, 6, 7, 8], 2, async (item) => {
    started.push(item);
    await tick(item === 3 ? 40 : 5);
    if (item === 2) throw new Error("item 2 failed");
    finished.push(item);
  });
  await expect(run).rejects.toThrow("item 2 failed");
  // Items 1 and 2 ran together; 1's worker took 3 before 2 failed; nothing was started after.
  expect(started).toEqual([1, 2, 3]);
  // Item 3 was in flight: the rejection did not wait for it, and it was not cancelled.
  expect(finished).toEqual([1]);
  await tick(60);
  expect(finished).toEqual([1, 3]);
  expect(started).toEqual([1, 2, 3]);
});

test("a second failure in flight is dropped, not reported", async () => {
  const run = mapWithLimit([1, 2], 2, async (item) => {
    await tick(item * 10);
    throw new Error(`item ${item} failed`);
  });
  await expect(run).rejects.toThrow("item 1 failed");
  await tick(40);
});

test("refuses a limit that would run nothing", async () => {
  await expect(mapWithLimit([1], 0, async (n) => n)).rejects.toThrow(RangeError);
});
