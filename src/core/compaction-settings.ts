/**
 * When and how much a compaction keeps (zod-free, so the run workflow can carry it). The planning
 * itself lives in `compaction.ts`.
 */
export interface CompactionSettings {
  /** Tokens kept free for the next response; compaction triggers when less would remain. */
  reserveTokens: number;
  /** Recent tokens kept verbatim after the summary. */
  keepRecentTokens: number;
}

export const DEFAULT_COMPACTION_SETTINGS: CompactionSettings = {
  reserveTokens: 16_384,
  keepRecentTokens: 20_000,
};
