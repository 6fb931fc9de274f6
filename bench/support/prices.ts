/**
 * List prices the cost figures use, with where they come from. Prices change: these are what the
 * cited pages said when read (2026-12-01); re-check before relying on them.
 */

/** One tier of a volume-tiered price: `upTo` units (cumulative, per month) at `pricePerMillion`. */
interface PriceTier {
  upTo: number;
  pricePerMillion: number;
}

/**
 * Temporal Cloud Pay-As-You-Go Action prices, USD per million Actions per calendar month, from
 * "Temporal Cloud pricing" (docs.temporal.io/cloud/pricing; source temporalio/documentation,
 * docs/evaluate/temporal-cloud/pricing.mdx at commit 003cfc58). Above 200M the page says
 * "contact Sales". The plan fee (Essentials: the greater of USD 100/month or 5 % of usage) and
 * its included 1M Actions are left out: they do not scale with turns.
 */
export const TEMPORAL_CLOUD_ACTION_TIERS: PriceTier[] = [
  { upTo: 5e6, pricePerMillion: 50 },
  { upTo: 10e6, pricePerMillion: 45 },
  { upTo: 20e6, pricePerMillion: 40 },
  { upTo: 50e6, pricePerMillion: 35 },
  { upTo: 100e6, pricePerMillion: 30 },
  { upTo: 200e6, pricePerMillion: 25 },
];
export const TEMPORAL_CLOUD_PRICE_SOURCE =
  "Temporal Cloud Pay-As-You-Go: USD 50 per million Actions for the first 5M in a month, 45 up to 10M, 40 up to 20M, 35 up to 50M, 30 up to 100M, 25 up to 200M (docs.temporal.io/cloud/pricing, temporalio/documentation docs/evaluate/temporal-cloud/pricing.mdx @ 003cfc58, read 2026-12-01)";

/**
 * S3 Standard request prices, USD per 1,000 requests, US East (N. Virginia). The AWS pricing
 * page (aws.amazon.com/s3/pricing) renders these cells from templates that the stored copy did
 * not resolve; the figures are the widely quoted ones, as given by "S3 request fees explained"
 * (c3x.dev/blog/s3-request-fees-explained): PUT, COPY, POST, LIST 0.005; GET, HEAD, SELECT 0.0004.
 */
export const S3_PRICE_PER_1000 = { putListCopyPost: 0.005, getHead: 0.0004 };
export const S3_PRICE_SOURCE =
  "S3 Standard, us-east-1: USD 0.005 per 1,000 PUT/COPY/POST/LIST, USD 0.0004 per 1,000 GET/HEAD (AWS's own page, aws.amazon.com/s3/pricing, could not be read in the stored copy; figures as quoted by c3x.dev/blog/s3-request-fees-explained, read 2026-12-01)";

/** Monthly Temporal Cloud bill for `actions` Actions in one month, tiers applied in order. */
export function temporalCloudActionsCost(actions: number): number {
  let cost = 0;
  let from = 0;
  for (const tier of TEMPORAL_CLOUD_ACTION_TIERS) {
    const inTier = Math.max(0, Math.min(actions, tier.upTo) - from);
    cost += (inTier / 1e6) * tier.pricePerMillion;
    from = tier.upTo;
  }
  if (actions > from)
    throw new Error(`no list price above ${from} Actions a month (Temporal: contact Sales)`);
  return cost;
}

/** S3 requests by kind (`GET object`, `PUT object`, `GET list`, `HEAD object`, …) → USD. */
export function s3RequestsCost(requests: Record<string, number>): number {
  let cost = 0;
  for (const [kind, count] of Object.entries(requests)) {
    if (kind.startsWith("DELETE")) continue; // free
    const classA = kind.startsWith("PUT") || kind.startsWith("POST") || kind === "GET list";
    cost += (count / 1000) * (classA ? S3_PRICE_PER_1000.putListCopyPost : S3_PRICE_PER_1000.getHead);
  }
  return cost;
}

/**
 * Compute, USD per vCPU-hour: AWS Fargate, Linux/x86, US East (N. Virginia), the per-vCPU part of
 * its price (memory is billed apart, USD 0.004445 per GB-hour). The figure is Fargate's long-
 * standing list price as widely quoted; AWS's page (aws.amazon.com/fargate/pricing) was not re-read
 * for it. CPU seconds measured on a benchmark machine are priced as if a Fargate vCPU did the same
 * work in the same time, which ignores the difference between the two CPUs.
 */
export const COMPUTE_USD_PER_VCPU_HOUR = 0.04048;
export const COMPUTE_PRICE_SOURCE =
  "AWS Fargate Linux/x86 us-east-1: USD 0.04048 per vCPU-hour (list price as widely quoted; aws.amazon.com/fargate/pricing not re-read), memory not included";

/** USD for `cpuSeconds` of CPU time at the Fargate vCPU price. */
export function computeCost(cpuSeconds: number): number {
  return (cpuSeconds / 3600) * COMPUTE_USD_PER_VCPU_HOUR;
}
