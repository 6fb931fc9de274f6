/** The eval benchmark's arithmetic: percentiles of case times and the overhead of an eval per case. */
import { median } from "./runs";

/** The nearest-rank percentile `p` (0–100) of `values`; 0 for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export interface OverheadSummary {
  /** Median over rounds of the eval's wall time per case. */
  evalMs: number;
  /** Median over rounds of the direct runs' wall time per case. */
  directMs: number;
  /** evalMs − directMs: what the eval adds to each case. */
  overheadMs: number;
  /** evalMs ÷ directMs. */
  ratio: number;
  /** Median over rounds of each round's own difference (rounds alternate, so each is paired). */
  pairedOverheadMs: number;
}

/** Per-case medians of the alternated rounds: `evalMs[i]` and `directMs[i]` were measured in round i. */
export function overheadSummary(evalMs: number[], directMs: number[]): OverheadSummary {
  if (evalMs.length === 0 || evalMs.length !== directMs.length)
    throw new Error("overheadSummary needs one eval and one direct time per round");
  const evalMedian = median(evalMs);
  const directMedian = median(directMs);
  return {
    evalMs: evalMedian,
    directMs: directMedian,
    overheadMs: evalMedian - directMedian,
    ratio: evalMedian / directMedian,
    pairedOverheadMs: median(evalMs.map((value, index) => value - directMs[index]!)),
  };
}

/** Cases finished per minute over a wall time. */
export function casesPerMinute(cases: number, wallMs: number): number {
  return wallMs > 0 ? (cases * 60_000) / wallMs : 0;
}
