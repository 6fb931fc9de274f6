/** The cost arithmetic the benchmarks report, checked against the price pages' own examples. */
import { monthlyCost } from "../../../bench/support/cost";
import { s3RequestsCost, temporalCloudActionsCost } from "../../../bench/support/prices";

test("Temporal Cloud tiers: the pricing page's example, 11.25M Actions, costs USD 525", () => {
  expect(temporalCloudActionsCost(11.25e6)).toBeCloseTo(525, 6);
  expect(temporalCloudActionsCost(1e6)).toBeCloseTo(50, 6);
});

test("Temporal Cloud: no list price above 200M Actions a month", () => {
  expect(() => temporalCloudActionsCost(200e6 + 1)).toThrow(/contact Sales/);
});

test("S3: PUT and LIST at the PUT rate, GET and HEAD at the GET rate, DELETE free", () => {
  expect(
    s3RequestsCost({
      "PUT object": 1000,
      "GET list": 1000,
      "GET object": 1000,
      "HEAD object": 1000,
      "DELETE object": 1000,
    }),
  ).toBeCloseTo(0.005 + 0.005 + 0.0004 + 0.0004, 10);
});

test("a month of turns: per-turn use times turns, priced", () => {
  const cost = monthlyCost({ label: "x", actionsPerTurn: 2.5, s3PerTurn: { "PUT object": 2 } }, 1e6);
  expect(cost.actions).toBe(2.5e6);
  expect(cost.temporalUsd).toBeCloseTo(125, 6);
  expect(cost.s3Usd).toBeCloseTo(10, 6);
  expect(cost.totalUsd).toBeCloseTo(135, 6);
});
