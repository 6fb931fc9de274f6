/**
 * Token usage and cost arithmetic. Kept apart from the message schemas so that workflow code can
 * use it without loading zod into the workflow bundle.
 */
import type { Usage } from "./messages";

export function emptyUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

/**
 * The sum of two usages, field by field. The sum is marked estimated when either part was, and
 * its cost unpriced when either part's was (a total that hides a missing price would lie).
 */
export function addUsage(total: Usage, add: Usage): Usage {
  const estimated = total.estimated || add.estimated;
  const unpriced = total.cost.unpriced || add.cost.unpriced;
  return {
    input: total.input + add.input,
    output: total.output + add.output,
    cacheRead: total.cacheRead + add.cacheRead,
    cacheWrite: total.cacheWrite + add.cacheWrite,
    totalTokens: total.totalTokens + add.totalTokens,
    cost: {
      input: total.cost.input + add.cost.input,
      output: total.cost.output + add.cost.output,
      cacheRead: total.cost.cacheRead + add.cost.cacheRead,
      cacheWrite: total.cost.cacheWrite + add.cost.cacheWrite,
      total: total.cost.total + add.cost.total,
      ...(unpriced ? { unpriced: true as const } : {}),
    },
    ...(estimated ? { estimated: true as const } : {}),
  };
}
