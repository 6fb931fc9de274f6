/**
 * Tree view of session entries and the context an LLM sees from a leaf.
 *
 * `buildContext` follows pi's `buildSessionContext` exactly (same messages, same order, same
 * model and thinking level), so a session opens identically in pi and in Keel.
 */
import type { AgentMessage } from "./messages";
import type {
  BranchSummaryEntry,
  CompactionEntry,
  ModelRef,
  SessionContext,
  SessionEntry,
} from "./session-types";

/** Lookup structures over a session's entries; derived data, rebuilt from entries at will. */
export interface SessionIndex {
  byId: Map<string, SessionEntry>;
  /** Child ids per parent id in file order; roots are listed under `null`. */
  children: Map<string | null, string[]>;
  /** Last entry in file order, null for an empty session. */
  leafId: string | null;
  /** Current label per entry (a label entry without text clears it). */
  labels: Map<string, string>;
  /** Entries with more than one child, in file order. */
  branchPoints: string[];
}

/** Index entries in one pass. Entries whose parent is missing are treated as roots. */
export function indexSession(entries: readonly SessionEntry[]): SessionIndex {
  const byId = new Map<string, SessionEntry>();
  const children = new Map<string | null, string[]>();
  const labels = new Map<string, string>();
  const branchPoints: string[] = [];
  for (const entry of entries) byId.set(entry.id, entry);
  for (const entry of entries) {
    const parent = entry.parentId !== null && byId.has(entry.parentId) ? entry.parentId : null;
    const siblings = children.get(parent);
    if (siblings) {
      siblings.push(entry.id);
      if (siblings.length === 2 && parent !== null) branchPoints.push(parent);
    } else {
      children.set(parent, [entry.id]);
    }
    if (entry.type === "label") {
      if (entry.label) labels.set(entry.targetId, entry.label);
      else labels.delete(entry.targetId);
    }
  }
  const leafId = entries.length > 0 ? entries[entries.length - 1]!.id : null;
  return { byId, children, leafId, labels, branchPoints };
}

/**
 * Entries from the root down to `id` (inclusive), root first. Empty when `id` is unknown.
 * A parent cycle (only possible in a hand-edited file) ends the walk instead of looping.
 */
export function pathToRoot(byId: ReadonlyMap<string, SessionEntry>, id: string): SessionEntry[] {
  const path: SessionEntry[] = [];
  const seen = new Set<string>();
  let current = byId.get(id);
  while (current && !seen.has(current.id)) {
    seen.add(current.id);
    path.push(current);
    current = current.parentId !== null ? byId.get(current.parentId) : undefined;
  }
  return path.reverse();
}

/** Id of the deepest entry on both paths, null when they share no entry. */
export function commonAncestor(byId: ReadonlyMap<string, SessionEntry>, a: string, b: string): string | null {
  const onA = new Set(pathToRoot(byId, a).map((entry) => entry.id));
  const pathB = pathToRoot(byId, b);
  for (let i = pathB.length - 1; i >= 0; i--) {
    if (onA.has(pathB[i]!.id)) return pathB[i]!.id;
  }
  return null;
}

/**
 * The context seen from `leafId`, as pi's `buildSessionContext`:
 * - `leafId === null`: nothing (the position before the first entry);
 * - `leafId` undefined or unknown: the last entry is the leaf;
 * - along the root→leaf path the last compaction applies: its summary first, then the entries
 *   from `firstKeptEntryId` up to the compaction, then everything after it;
 * - message entries contribute their message, custom_message entries a `custom` message,
 *   branch summaries (with text) a `branchSummary` message; everything else contributes nothing;
 * - model = last model change or assistant message on the path; thinking level = last change.
 */
export function buildContext(
  entries: readonly SessionEntry[],
  leafId?: string | null,
  byId?: ReadonlyMap<string, SessionEntry>,
): SessionContext {
  if (leafId === null) return { messages: [], thinkingLevel: "off", model: null };
  const lookup = byId ?? new Map(entries.map((entry) => [entry.id, entry]));
  let leaf = leafId !== undefined ? lookup.get(leafId) : undefined;
  leaf ??= entries[entries.length - 1];
  if (!leaf) return { messages: [], thinkingLevel: "off", model: null };

  const path = pathToRoot(lookup, leaf.id);
  let thinkingLevel = "off";
  let model: ModelRef | null = null;
  let compactionIndex = -1;
  path.forEach((entry, i) => {
    if (entry.type === "thinking_level_change") thinkingLevel = entry.thinkingLevel;
    else if (entry.type === "model_change") model = { provider: entry.provider, modelId: entry.modelId };
    else if (entry.type === "message" && entry.message.role === "assistant") {
      model = { provider: entry.message.provider, modelId: entry.message.model };
    } else if (entry.type === "compaction") compactionIndex = i;
  });

  const messages: AgentMessage[] = [];
  if (compactionIndex === -1) {
    for (const entry of path) appendContextMessage(messages, entry);
    return { messages, thinkingLevel, model };
  }
  const compaction = path[compactionIndex] as CompactionEntry;
  messages.push(compactionSummaryMessage(compaction));
  let kept = false;
  for (let i = 0; i < compactionIndex; i++) {
    const entry = path[i]!;
    if (entry.id === compaction.firstKeptEntryId) kept = true;
    if (kept) appendContextMessage(messages, entry);
  }
  for (let i = compactionIndex + 1; i < path.length; i++) appendContextMessage(messages, path[i]!);
  return { messages, thinkingLevel, model };
}

/** The agent message an entry contributes to context, if any (compactions handled apart). */
export function contextMessageOf(entry: SessionEntry): AgentMessage | undefined {
  switch (entry.type) {
    case "message":
      return entry.message;
    case "custom_message":
      return {
        role: "custom",
        customType: entry.customType,
        content: entry.content,
        display: entry.display,
        details: entry.details,
        timestamp: isoToEpochMs(entry.timestamp),
      };
    case "branch_summary":
      return entry.summary ? branchSummaryMessage(entry) : undefined;
    default:
      return undefined;
  }
}

export function branchSummaryMessage(entry: BranchSummaryEntry): AgentMessage {
  return {
    role: "branchSummary",
    summary: entry.summary,
    fromId: entry.fromId,
    timestamp: isoToEpochMs(entry.timestamp),
  };
}

export function compactionSummaryMessage(entry: CompactionEntry): AgentMessage {
  return {
    role: "compactionSummary",
    summary: entry.summary,
    tokensBefore: entry.tokensBefore,
    timestamp: isoToEpochMs(entry.timestamp),
  };
}

/** Epoch ms of an ISO timestamp (NaN for an unparsable one, as pi yields). Pure: no clock. */
export function isoToEpochMs(iso: string): number {
  return new Date(iso).getTime();
}

function appendContextMessage(messages: AgentMessage[], entry: SessionEntry): void {
  const message = contextMessageOf(entry);
  if (message) messages.push(message);
}
