import { addUsage, emptyUsage } from "../../../src/core/usage";

test("usage adds field by field and keeps the estimated and unpriced marks of either part", () => {
  const priced = {
    ...emptyUsage(),
    input: 10,
    output: 5,
    totalTokens: 15,
    cost: { ...emptyUsage().cost, total: 0.5 },
  };
  const estimated = { ...emptyUsage(), input: 3, totalTokens: 3, estimated: true as const };
  const unpriced = {
    ...emptyUsage(),
    output: 2,
    totalTokens: 2,
    cost: { ...emptyUsage().cost, unpriced: true as const },
  };
  expect(addUsage(priced, priced)).toEqual({
    ...emptyUsage(),
    input: 20,
    output: 10,
    totalTokens: 30,
    cost: { ...emptyUsage().cost, total: 1 },
  });
  const sum = addUsage(addUsage(priced, estimated), unpriced);
  expect(sum).toMatchObject({
    input: 13,
    output: 7,
    totalTokens: 20,
    estimated: true,
    cost: { total: 0.5, unpriced: true },
  });
  expect(addUsage(emptyUsage(), emptyUsage())).not.toHaveProperty("estimated");
});
