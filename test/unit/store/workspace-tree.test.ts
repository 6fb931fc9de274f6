/** The scan's bounded map: once an item fails, no further item is started. */
import { mapWithLimit } from "../../../src/store/workspace-tree";

test("mapWithLimit rejects with the first failure and starts nothing after it", async () => {
  const started: number[] = [];
  const run = mapWithLimit([1, 2, 3, 4, 5, 6, 7, 8], 2, async (item) => {
    started.push(item);
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (item === 2) throw new Error("item 2 failed");
  });
  await expect(run).rejects.toThrow("item 2 failed");
  await new Promise((resolve) => setTimeout(resolve, 50));
  // Items 1 and 2 ran together; 1's worker took 3 before 2 failed; nothing was started after.
  expect(started).toEqual([1, 2, 3]);
});
