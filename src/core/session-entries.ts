/**
 * Builders for new session entries. The caller assigns id, parent and timestamp (the workflow
 * does so before the activity that writes the entry runs), so builders stay pure.
 */
import type { AgentMessage, UserMessage } from "./messages";
import type {
  BranchSummaryEntry,
  CompactionEntry,
  CustomEntry,
  CustomMessageEntry,
  FileOperationDetails,
  LabelEntry,
  MessageEntry,
  ModelChangeEntry,
  SessionHeader,
  ThinkingLevelChangeEntry,
} from "./session-types";
import { CURRENT_SESSION_VERSION } from "./session-version";

/** Where a new entry goes: its id, its parent (null for a root) and its ISO timestamp. */
export interface EntryPlacement {
  id: string;
  parentId: string | null;
  timestamp: string;
}

/** Custom type of the marker entry that moves the leaf without adding content. */
const LEAF_MARKER_CUSTOM_TYPE = "keel.leaf";

export function createSessionHeader(
  id: string,
  timestamp: string,
  cwd: string,
  parentSession?: string,
): SessionHeader {
  const header: SessionHeader = { type: "session", version: CURRENT_SESSION_VERSION, id, timestamp, cwd };
  if (parentSession !== undefined) header.parentSession = parentSession;
  return header;
}

export function createMessageEntry(at: EntryPlacement, message: AgentMessage): MessageEntry {
  return { type: "message", ...at, message };
}

export function createModelChangeEntry(
  at: EntryPlacement,
  provider: string,
  modelId: string,
): ModelChangeEntry {
  return { type: "model_change", ...at, provider, modelId };
}

export function createThinkingLevelChangeEntry(
  at: EntryPlacement,
  thinkingLevel: string,
): ThinkingLevelChangeEntry {
  return { type: "thinking_level_change", ...at, thinkingLevel };
}

export function createCompactionEntry(
  at: EntryPlacement,
  summary: string,
  firstKeptEntryId: string,
  tokensBefore: number,
  details: FileOperationDetails,
): CompactionEntry {
  return { type: "compaction", ...at, summary, firstKeptEntryId, tokensBefore, details };
}

/** A branch summary; `at.parentId` is the entry the conversation returns to. */
export function createBranchSummaryEntry(
  at: EntryPlacement,
  summary: string,
  details?: FileOperationDetails,
): BranchSummaryEntry {
  const entry: BranchSummaryEntry = { type: "branch_summary", ...at, fromId: at.parentId ?? "root", summary };
  if (details) entry.details = details;
  return entry;
}

export function createCustomEntry(at: EntryPlacement, customType: string, data?: unknown): CustomEntry {
  const entry: CustomEntry = { type: "custom", ...at, customType };
  if (data !== undefined) entry.data = data;
  return entry;
}

export function createCustomMessageEntry(
  at: EntryPlacement,
  customType: string,
  content: UserMessage["content"],
  display: boolean,
  details?: unknown,
): CustomMessageEntry {
  const entry: CustomMessageEntry = { type: "custom_message", ...at, customType, content, display };
  if (details !== undefined) entry.details = details;
  return entry;
}

/** Sets the label of `targetId`; `label` undefined clears it. */
export function createLabelEntry(at: EntryPlacement, targetId: string, label?: string): LabelEntry {
  const entry: LabelEntry = { type: "label", ...at, targetId };
  if (label !== undefined) entry.label = label;
  return entry;
}

/**
 * Moves the leaf to `at.parentId` without content: the leaf is the last entry written, and this
 * `custom` entry (invisible in context, for pi too) sits right below the new position.
 */
export function createLeafMarker(at: EntryPlacement & { parentId: string }): CustomEntry {
  return { type: "custom", ...at, customType: LEAF_MARKER_CUSTOM_TYPE };
}
