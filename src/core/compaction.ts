/**
 * Compaction planning, following pi's algorithm (`dist/core/compaction/*.js`): where to cut,
 * what to summarize, which files were touched, the summarization prompts, and the compaction
 * entry made from the summary text. The LLM call itself happens elsewhere (an activity).
 */
import { type CompactionSettings, DEFAULT_COMPACTION_SETTINGS } from "./compaction-settings";
import { type AgentMessage, convertToLlm, type Message } from "./messages";
import { createCompactionEntry, type EntryPlacement } from "./session-entries";
import { branchSummaryMessage, buildContext, contextMessageOf } from "./session-tree";
import type { CompactionEntry, FileOperationDetails, SessionEntry } from "./session-types";
import {
  SUMMARIZATION_PROMPT,
  SUMMARIZATION_SYSTEM_PROMPT,
  TURN_PREFIX_SUMMARIZATION_PROMPT,
  UPDATE_SUMMARIZATION_PROMPT,
} from "./summary-prompts";
import { estimateContextTokens, estimateTokens } from "./tokens";

export type { CompactionSettings } from "./compaction-settings";
/** Characters of one tool result kept when serializing a conversation for a summary. */
export const TOOL_RESULT_MAX_CHARS = 2_000;
/** Share of `reserveTokens` the history summary may use as output. */
const HISTORY_SUMMARY_OUTPUT_SHARE = 0.8;
/** Share of `reserveTokens` the turn-prefix summary may use as output. */
const TURN_PREFIX_SUMMARY_OUTPUT_SHARE = 0.5;
/** Summary used for the history part of a split turn when nothing precedes the turn. */
const NO_PRIOR_HISTORY = "No prior history.";

/** Files seen in tool calls: sets while collecting, sorted lists in the result. */
export interface FileOperations {
  read: Set<string>;
  written: Set<string>;
  edited: Set<string>;
}

export function createFileOperations(): FileOperations {
  return { read: new Set(), written: new Set(), edited: new Set() };
}

/** Record the `path` argument of read / write / edit tool calls of an assistant message. */
export function collectFileOperations(message: AgentMessage, ops: FileOperations): void {
  if (message.role !== "assistant") return;
  for (const block of message.content) {
    if (block.type !== "toolCall") continue;
    const path = block.arguments.path;
    if (typeof path !== "string" || path === "") continue;
    if (block.name === "read") ops.read.add(path);
    else if (block.name === "write") ops.written.add(path);
    else if (block.name === "edit") ops.edited.add(path);
  }
}

/** Add the file lists of an earlier summary (pi-generated details only) to `ops`. */
export function addPreviousFileDetails(details: unknown, ops: FileOperations): void {
  if (typeof details !== "object" || details === null) return;
  const { readFiles, modifiedFiles } = details as Partial<Record<keyof FileOperationDetails, unknown>>;
  if (Array.isArray(readFiles)) for (const f of readFiles) if (typeof f === "string") ops.read.add(f);
  if (Array.isArray(modifiedFiles))
    for (const f of modifiedFiles) if (typeof f === "string") ops.edited.add(f);
}

/** Sorted lists: files only read, and files written or edited. */
export function fileLists(ops: FileOperations): FileOperationDetails {
  const modified = new Set([...ops.edited, ...ops.written]);
  return {
    readFiles: [...ops.read].filter((f) => !modified.has(f)).sort(),
    modifiedFiles: [...modified].sort(),
  };
}

/** The `<read-files>` / `<modified-files>` sections pi appends to a summary ("" when none). */
export function formatFileOperations(details: FileOperationDetails): string {
  const sections: string[] = [];
  if (details.readFiles.length > 0)
    sections.push(`<read-files>\n${details.readFiles.join("\n")}\n</read-files>`);
  if (details.modifiedFiles.length > 0) {
    sections.push(`<modified-files>\n${details.modifiedFiles.join("\n")}\n</modified-files>`);
  }
  return sections.length === 0 ? "" : `\n\n${sections.join("\n\n")}`;
}

/**
 * A conversation as plain text for a summarizer (so it does not continue it): one
 * `[User]` / `[Assistant]` / `[Assistant thinking]` / `[Assistant tool calls]` / `[Tool result]`
 * paragraph each; tool results cut to `TOOL_RESULT_MAX_CHARS`.
 */
export function serializeConversation(messages: readonly Message[]): string {
  const parts: string[] = [];
  for (const message of messages) {
    if (message.role === "user") {
      const text =
        typeof message.content === "string"
          ? message.content
          : message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
      if (text) parts.push(`[User]: ${text}`);
    } else if (message.role === "assistant") {
      const texts: string[] = [];
      const thinking: string[] = [];
      const calls: string[] = [];
      for (const block of message.content) {
        if (block.type === "text") texts.push(block.text);
        else if (block.type === "thinking") thinking.push(block.thinking);
        else {
          const args = Object.entries(block.arguments).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
          calls.push(`${block.name}(${args.join(", ")})`);
        }
      }
      if (thinking.length > 0) parts.push(`[Assistant thinking]: ${thinking.join("\n")}`);
      if (texts.length > 0) parts.push(`[Assistant]: ${texts.join("\n")}`);
      if (calls.length > 0) parts.push(`[Assistant tool calls]: ${calls.join("; ")}`);
    } else {
      const text = message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
      if (text) parts.push(`[Tool result]: ${truncateForSummary(text, TOOL_RESULT_MAX_CHARS)}`);
    }
  }
  return parts.join("\n\n");
}

function truncateForSummary(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n\n[... ${text.length - maxChars} more characters truncated]`;
}

export interface CutPoint {
  /** First entry kept verbatim. */
  firstKeptEntryIndex: number;
  /** Start of the turn the cut falls into (-1 when the cut is at a user message). */
  turnStartIndex: number;
  /** True when the cut falls inside a turn (its prefix needs its own summary). */
  isSplitTurn: boolean;
}

/**
 * Indices in [start, end) where a kept part may begin: any message but a tool result (a result
 * must follow its call), and branch summaries / custom messages.
 */
function findValidCutPoints(entries: readonly SessionEntry[], start: number, end: number): number[] {
  const points: number[] = [];
  for (let i = start; i < end; i++) {
    const entry = entries[i]!;
    const isMessageCut = entry.type === "message" && entry.message.role !== "toolResult";
    if (isMessageCut || entry.type === "branch_summary" || entry.type === "custom_message") points.push(i);
  }
  return points;
}

/** Index of the user message (or bash execution, branch summary, custom message) starting the turn at `index`. */
function findTurnStartIndex(entries: readonly SessionEntry[], index: number, start: number): number {
  for (let i = index; i >= start; i--) {
    const entry = entries[i]!;
    if (entry.type === "branch_summary" || entry.type === "custom_message") return i;
    if (
      entry.type === "message" &&
      (entry.message.role === "user" || entry.message.role === "bashExecution")
    ) {
      return i;
    }
  }
  return -1;
}

/**
 * Where to cut so that about `keepRecentTokens` stay: walk back from the newest message summing
 * estimates; at the first message where the sum reaches the budget, cut at the nearest valid cut
 * point at or after it, then move the cut back over non-message entries (settings changes and
 * the like) up to the previous message or compaction.
 */
export function findCutPoint(
  entries: readonly SessionEntry[],
  start: number,
  end: number,
  keepRecentTokens: number,
): CutPoint {
  const points = findValidCutPoints(entries, start, end);
  if (points.length === 0) return { firstKeptEntryIndex: start, turnStartIndex: -1, isSplitTurn: false };
  let cut = points[0]!;
  let accumulated = 0;
  for (let i = end - 1; i >= start; i--) {
    const entry = entries[i]!;
    if (entry.type !== "message") continue;
    accumulated += estimateTokens(entry.message);
    if (accumulated >= keepRecentTokens) {
      cut = points.find((p) => p >= i) ?? cut;
      break;
    }
  }
  while (cut > start) {
    const previous = entries[cut - 1]!;
    if (previous.type === "compaction" || previous.type === "message") break;
    cut--;
  }
  const cutEntry = entries[cut]!;
  const atUser = cutEntry.type === "message" && cutEntry.message.role === "user";
  const turnStartIndex = atUser ? -1 : findTurnStartIndex(entries, cut, start);
  return { firstKeptEntryIndex: cut, turnStartIndex, isSplitTurn: !atUser && turnStartIndex !== -1 };
}

/** Everything needed to ask for a summary and to write the compaction entry afterwards. */
export interface CompactionPreparation {
  firstKeptEntryId: string;
  /** Messages replaced by the summary. */
  messagesToSummarize: AgentMessage[];
  /** Start of a split turn, summarized separately (empty unless `isSplitTurn`). */
  turnPrefixMessages: AgentMessage[];
  isSplitTurn: boolean;
  /** Context size before compaction. */
  tokensBefore: number;
  /** Summary of the previous compaction on the path, merged into the new one. */
  previousSummary?: string;
  /** Files read / modified, including those of the previous compaction. */
  fileDetails: FileOperationDetails;
  settings: CompactionSettings;
}

/**
 * Plan a compaction of the root→leaf `pathEntries` (pi's `prepareCompaction`). Only entries
 * after the previous compaction's kept part are considered. Returns undefined when the path
 * already ends in a compaction.
 */
export function prepareCompaction(
  pathEntries: readonly SessionEntry[],
  settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
): CompactionPreparation | undefined {
  const last = pathEntries[pathEntries.length - 1];
  if (!last || last.type === "compaction") return undefined;
  let previousIndex = -1;
  for (let i = pathEntries.length - 1; i >= 0; i--) {
    if (pathEntries[i]!.type === "compaction") {
      previousIndex = i;
      break;
    }
  }
  const previous = previousIndex >= 0 ? (pathEntries[previousIndex] as CompactionEntry) : undefined;
  let boundaryStart = 0;
  if (previous) {
    const keptIndex = pathEntries.findIndex((entry) => entry.id === previous.firstKeptEntryId);
    boundaryStart = keptIndex >= 0 ? keptIndex : previousIndex + 1;
  }
  const tokensBefore = estimateContextTokens(buildContext(pathEntries).messages).tokens;
  const cut = findCutPoint(pathEntries, boundaryStart, pathEntries.length, settings.keepRecentTokens);
  const firstKept = pathEntries[cut.firstKeptEntryIndex];
  if (!firstKept) return undefined;

  const historyEnd = cut.isSplitTurn ? cut.turnStartIndex : cut.firstKeptEntryIndex;
  const messagesToSummarize = summarizableMessages(pathEntries, boundaryStart, historyEnd);
  const turnPrefixMessages = cut.isSplitTurn
    ? summarizableMessages(pathEntries, cut.turnStartIndex, cut.firstKeptEntryIndex)
    : [];
  const ops = createFileOperations();
  if (previous && !previous.fromHook) addPreviousFileDetails(previous.details, ops);
  for (const message of [...messagesToSummarize, ...turnPrefixMessages]) collectFileOperations(message, ops);

  const preparation: CompactionPreparation = {
    firstKeptEntryId: firstKept.id,
    messagesToSummarize,
    turnPrefixMessages,
    isSplitTurn: cut.isSplitTurn,
    tokensBefore,
    fileDetails: fileLists(ops),
    settings,
  };
  if (previous) preparation.previousSummary = previous.summary;
  return preparation;
}

/**
 * Messages of entries [start, end) for a summary (pi's `getMessageFromEntryForCompaction`):
 * like context, except that a branch summary counts even when empty and compactions never do.
 */
function summarizableMessages(entries: readonly SessionEntry[], start: number, end: number): AgentMessage[] {
  const out: AgentMessage[] = [];
  for (let i = start; i < end; i++) {
    const entry = entries[i]!;
    const message = entry.type === "branch_summary" ? branchSummaryMessage(entry) : contextMessageOf(entry);
    if (message) out.push(message);
  }
  return out;
}

/** One summarization request: system prompt, the user prompt, and an output token limit. */
export interface SummaryRequest {
  systemPrompt: string;
  prompt: string;
  maxTokens: number;
}

export interface CompactionRequests {
  /** Summary of `messagesToSummarize` (merged with the previous summary when there is one). */
  history: SummaryRequest;
  /** Summary of a split turn's prefix; absent when the turn is not split. */
  turnPrefix?: SummaryRequest;
}

/** The summarization requests for a planned compaction, worded as pi words them. */
export function buildCompactionRequests(
  preparation: CompactionPreparation,
  customInstructions?: string,
): CompactionRequests {
  let instructions = preparation.previousSummary ? UPDATE_SUMMARIZATION_PROMPT : SUMMARIZATION_PROMPT;
  if (customInstructions) instructions = `${instructions}\n\nAdditional focus: ${customInstructions}`;
  let prompt = conversationBlock(preparation.messagesToSummarize);
  if (preparation.previousSummary)
    prompt += `<previous-summary>\n${preparation.previousSummary}\n</previous-summary>\n\n`;
  const reserve = preparation.settings.reserveTokens;
  const requests: CompactionRequests = {
    history: {
      systemPrompt: SUMMARIZATION_SYSTEM_PROMPT,
      prompt: prompt + instructions,
      maxTokens: Math.floor(HISTORY_SUMMARY_OUTPUT_SHARE * reserve),
    },
  };
  if (preparation.isSplitTurn && preparation.turnPrefixMessages.length > 0) {
    requests.turnPrefix = {
      systemPrompt: SUMMARIZATION_SYSTEM_PROMPT,
      prompt: conversationBlock(preparation.turnPrefixMessages) + TURN_PREFIX_SUMMARIZATION_PROMPT,
      maxTokens: Math.floor(TURN_PREFIX_SUMMARY_OUTPUT_SHARE * reserve),
    };
  }
  return requests;
}

/** `<conversation>…</conversation>` block of agent messages, converted for the LLM first. */
export function conversationBlock(messages: readonly AgentMessage[]): string {
  return `<conversation>\n${serializeConversation(convertToLlm(messages))}\n</conversation>\n\n`;
}

/** The summary text stored in the compaction entry, from the summarizer's answers. */
function composeCompactionSummary(
  preparation: CompactionPreparation,
  historySummary: string,
  turnPrefixSummary?: string,
): string {
  let summary = historySummary;
  if (preparation.isSplitTurn && turnPrefixSummary !== undefined) {
    const history = preparation.messagesToSummarize.length > 0 ? historySummary : NO_PRIOR_HISTORY;
    summary = `${history}\n\n---\n\n**Turn Context (split turn):**\n\n${turnPrefixSummary}`;
  }
  return summary + formatFileOperations(preparation.fileDetails);
}

/** The compaction entry for a finished summary, placed by the caller. */
export function compactionEntryFor(
  at: EntryPlacement,
  preparation: CompactionPreparation,
  historySummary: string,
  turnPrefixSummary?: string,
): CompactionEntry {
  return createCompactionEntry(
    at,
    composeCompactionSummary(preparation, historySummary, turnPrefixSummary),
    preparation.firstKeptEntryId,
    preparation.tokensBefore,
    preparation.fileDetails,
  );
}
