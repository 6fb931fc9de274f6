/** What turns cost at list prices: Temporal Cloud Actions and S3 requests (prices in prices.ts). */
import {
  S3_PRICE_SOURCE,
  s3RequestsCost,
  TEMPORAL_CLOUD_PRICE_SOURCE,
  temporalCloudActionsCost,
} from "./prices";
import { fixed, table } from "./report";

export interface PerTurnUse {
  label: string;
  /** Billable Temporal Actions per turn. */
  actionsPerTurn: number;
  /** S3 requests per turn by kind (`GET object`, `PUT object`, `GET list`, …). */
  s3PerTurn: Record<string, number>;
}

export interface MonthlyCost {
  label: string;
  actions: number;
  temporalUsd: number;
  s3Requests: number;
  s3Usd: number;
  totalUsd: number;
}

/** The month's bill for `turns` turns with `use` per turn (each workload alone in its account). */
export function monthlyCost(use: PerTurnUse, turns: number): MonthlyCost {
  const actions = use.actionsPerTurn * turns;
  const s3 = Object.fromEntries(Object.entries(use.s3PerTurn).map(([kind, count]) => [kind, count * turns]));
  const temporalUsd = temporalCloudActionsCost(actions);
  const s3Usd = s3RequestsCost(s3);
  return {
    label: use.label,
    actions,
    temporalUsd,
    s3Requests: Object.values(s3).reduce((sum, count) => sum + count, 0),
    s3Usd,
    totalUsd: temporalUsd + s3Usd,
  };
}

/** A markdown section: cost of `turns` turns a month for each workload, with the prices' sources. */
export function costSection(uses: PerTurnUse[], turns: number): { markdown: string; costs: MonthlyCost[] } {
  const costs = uses.map((use) => monthlyCost(use, turns));
  const markdown = `${table(
    [
      "",
      "Actions / turn",
      "S3 requests / turn",
      "Actions / month",
      "Temporal Cloud USD",
      "S3 requests USD",
      "total USD",
    ],
    costs.map((cost, index) => [
      cost.label,
      fixed(uses[index]!.actionsPerTurn, 2),
      fixed(cost.s3Requests / turns, 2),
      `${fixed(cost.actions / 1e6, 2)}M`,
      fixed(cost.temporalUsd, 0),
      fixed(cost.s3Usd, 2),
      fixed(cost.totalUsd, 0),
    ]),
    ["---", "---:", "---:", "---:", "---:", "---:", "---:"],
  )}

Monthly bill for ${fixed(turns / 1e6, 0)} million turns a month, tiers applied as if the workload were the account's
only use; the Temporal Cloud plan fee, storage, model tokens and compute are not included.
Prices: ${TEMPORAL_CLOUD_PRICE_SOURCE}. ${S3_PRICE_SOURCE}.`;
  return { markdown, costs };
}
