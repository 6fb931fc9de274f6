/** The eval benchmark's arithmetic. */
import { casesPerMinute, overheadSummary, percentile } from "../../../bench/support/eval-stats";

test("percentile is the nearest rank, 0 for no values", () => {
  const values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
  expect(percentile(values, 50)).toBe(5);
  expect(percentile(values, 95)).toBe(10);
  expect(percentile(values, 0)).toBe(1);
  expect(percentile([], 50)).toBe(0);
});

test("overhead per case: medians of each side, their difference and ratio, and the median paired difference", () => {
  const summary = overheadSummary([300, 320, 500], [200, 260, 210]);
  expect(summary.evalMs).toBe(320);
  expect(summary.directMs).toBe(210);
  expect(summary.overheadMs).toBe(110);
  expect(summary.ratio).toBeCloseTo(320 / 210);
  // Paired per round: 100, 60, 290.
  expect(summary.pairedOverheadMs).toBe(100);
  expect(() => overheadSummary([1], [])).toThrow();
});

test("cases per minute", () => {
  expect(casesPerMinute(200, 60_000)).toBe(200);
  expect(casesPerMinute(10, 0)).toBe(0);
});
