/**
 * The one call that turns a session tree into what a provider is sent: context from the leaf
 * (compaction applied), agent messages converted as pi converts them, old tool outputs pruned,
 * then the cleanup loop, so the result satisfies `checkInvariants`.
 */
import { convertToLlm, type Message } from "./messages";
import { type CleanupOptions, type PruneOptions, pruneOldToolOutputs, runCleanupLoop } from "./sanitize";
import { buildContext } from "./session-tree";
import type { ModelRef, SessionEntry } from "./session-types";

export interface LlmMessagesOptions {
  cleanup?: CleanupOptions;
  /** Pruning thresholds; `false` turns pruning off. */
  prune?: PruneOptions | false;
}

export interface LlmMessages {
  messages: Message[];
  model: ModelRef | null;
  thinkingLevel: string;
  /** Tool results whose output was replaced by the pruning marker. */
  prunedCount: number;
  /** False when the cleanup loop hit its iteration cap (check the invariants before sending). */
  converged: boolean;
}

/** Provider-ready messages for `leafId` (default: the last entry). Pure. */
export function llmMessagesFor(
  entries: readonly SessionEntry[],
  leafId?: string | null,
  options: LlmMessagesOptions = {},
  byId?: ReadonlyMap<string, SessionEntry>,
): LlmMessages {
  const context = buildContext(entries, leafId, byId);
  const converted = convertToLlm(context.messages);
  const pruned = options.prune === false ? undefined : pruneOldToolOutputs(converted, options.prune);
  const cleaned = runCleanupLoop(pruned?.messages ?? converted, options.cleanup);
  return {
    messages: cleaned.messages,
    model: context.model,
    thinkingLevel: context.thinkingLevel,
    prunedCount: pruned?.prunedCount ?? 0,
    converged: cleaned.converged,
  };
}
