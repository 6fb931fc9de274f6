/** The pace of a runner's claim: fast while its environment's doorbell rang lately, else the idle pace. */
import { doorbellPollMs } from "../../../src/environments/calls";

const now = 1_800_000_000_000;

test("an environment that never rang, or rang 30 s ago or more, is polled at the idle pace", () => {
  expect(doorbellPollMs(undefined, now)).toBe(50);
  expect(doorbellPollMs({ at: now - 30_000 }, now)).toBe(50);
  expect(doorbellPollMs({ at: now - 3_600_000 }, now)).toBe(50);
});

test("a ring within the last 30 s makes the busy pace", () => {
  expect(doorbellPollMs({ at: now }, now)).toBe(10);
  expect(doorbellPollMs({ at: now - 29_999 }, now)).toBe(10);
});

test("a ring stamped ahead of this clock (another machine's) counts within the same window only", () => {
  expect(doorbellPollMs({ at: now + 5_000 }, now)).toBe(10);
  expect(doorbellPollMs({ at: now + 60_000 }, now)).toBe(50);
});
