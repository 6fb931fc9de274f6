/**
 * Branch summary planning (pi's `branch-summarization`): when the leaf moves to another branch,
 * the entries being left are summarized so their context is not lost.
 */
import {
  addPreviousFileDetails,
  collectFileOperations,
  conversationBlock,
  createFileOperations,
  fileLists,
  formatFileOperations,
  type SummaryRequest,
} from "./compaction";
import type { AgentMessage } from "./messages";
import {
  branchSummaryMessage,
  commonAncestor,
  compactionSummaryMessage,
  contextMessageOf,
} from "./session-tree";
import type { FileOperationDetails, SessionEntry } from "./session-types";
import {
  BRANCH_SUMMARY_PREAMBLE,
  BRANCH_SUMMARY_PROMPT,
  SUMMARIZATION_SYSTEM_PROMPT,
} from "./summary-prompts";
import { estimateTokens } from "./tokens";

/** Output limit of a branch summary, as pi sets it. */
const BRANCH_SUMMARY_MAX_TOKENS = 2_048;
/** An older summary that overflows the budget is still taken while less than this share is used. */
const SUMMARY_OVERFLOW_SHARE = 0.9;
/** Text stored when the abandoned branch held nothing to summarize. */
export const EMPTY_BRANCH_SUMMARY = "No content to summarize";

export interface BranchEntries {
  /** Entries from just below the common ancestor to the old leaf, oldest first. */
  entries: SessionEntry[];
  commonAncestorId: string | null;
}

/** Entries left behind when moving from `oldLeafId` to `targetId` (compactions included). */
export function collectEntriesForBranchSummary(
  byId: ReadonlyMap<string, SessionEntry>,
  oldLeafId: string | null,
  targetId: string,
): BranchEntries {
  if (!oldLeafId) return { entries: [], commonAncestorId: null };
  const ancestor = commonAncestor(byId, oldLeafId, targetId);
  const entries: SessionEntry[] = [];
  let current: string | null = oldLeafId;
  while (current && current !== ancestor) {
    const entry = byId.get(current);
    if (!entry || entries.includes(entry)) break;
    entries.push(entry);
    current = entry.parentId;
  }
  return { entries: entries.reverse(), commonAncestorId: ancestor };
}

export interface PreparedBranch {
  messages: AgentMessage[];
  fileDetails: FileOperationDetails;
  totalTokens: number;
}

/**
 * Messages to summarize, fitted newest-first into `tokenBudget` (0 = no limit); tool results
 * are left out (the calls say enough). When the budget is exceeded, an older compaction or
 * branch summary is still taken while less than 90% of the budget is used. Files touched are
 * collected from every message seen and from earlier branch summaries' details.
 */
export function prepareBranchEntries(entries: readonly SessionEntry[], tokenBudget = 0): PreparedBranch {
  const ops = createFileOperations();
  for (const entry of entries) {
    if (entry.type === "branch_summary" && !entry.fromHook) addPreviousFileDetails(entry.details, ops);
  }
  const messages: AgentMessage[] = [];
  let totalTokens = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    const message = branchMessageOf(entry);
    if (!message) continue;
    collectFileOperations(message, ops);
    const tokens = estimateTokens(message);
    if (tokenBudget > 0 && totalTokens + tokens > tokenBudget) {
      const isSummary = entry.type === "compaction" || entry.type === "branch_summary";
      if (isSummary && totalTokens < tokenBudget * SUMMARY_OVERFLOW_SHARE) {
        messages.unshift(message);
        totalTokens += tokens;
      }
      break;
    }
    messages.unshift(message);
    totalTokens += tokens;
  }
  return { messages, fileDetails: fileLists(ops), totalTokens };
}

function branchMessageOf(entry: SessionEntry): AgentMessage | undefined {
  if (entry.type === "message" && entry.message.role === "toolResult") return undefined;
  if (entry.type === "compaction") return compactionSummaryMessage(entry);
  if (entry.type === "branch_summary") return branchSummaryMessage(entry);
  return contextMessageOf(entry);
}

/**
 * The summarization request for a prepared branch; `replaceInstructions` uses
 * `customInstructions` instead of the default prompt. Undefined when there is nothing to
 * summarize (store `EMPTY_BRANCH_SUMMARY` then).
 */
export function buildBranchSummaryRequest(
  prepared: PreparedBranch,
  customInstructions?: string,
  replaceInstructions = false,
): SummaryRequest | undefined {
  if (prepared.messages.length === 0) return undefined;
  let instructions = BRANCH_SUMMARY_PROMPT;
  if (customInstructions) {
    instructions = replaceInstructions
      ? customInstructions
      : `${BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: ${customInstructions}`;
  }
  return {
    systemPrompt: SUMMARIZATION_SYSTEM_PROMPT,
    prompt: conversationBlock(prepared.messages) + instructions,
    maxTokens: BRANCH_SUMMARY_MAX_TOKENS,
  };
}

/** The text stored in the branch_summary entry: preamble, the summary, then the file lists. */
export function composeBranchSummary(summaryText: string, fileDetails: FileOperationDetails): string {
  return BRANCH_SUMMARY_PREAMBLE + summaryText + formatFileOperations(fileDetails);
}
