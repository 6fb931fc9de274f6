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

/** The sum of two usages, field by field. */
export function addUsage(total: Usage, add: Usage): Usage {
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
    },
  };
}
