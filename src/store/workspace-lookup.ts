/**
 * Which workspace snapshot applies to an entry, across forks: used by the workspace activities
 * (claim, restore, tool calls on a worker without the workspace) and by the export with workspace.
 */
import type { SessionEntry, SessionHeader } from "../core/session-types";
import type { SessionRef } from "./session-keys";
import type { SessionStore } from "./session-store";
import type { AncestryStep, SnapshotRecord, WorkspaceSnapshots } from "./workspace-snapshots";

const isToolResult = (entry: SessionEntry): boolean =>
  entry.type === "message" && entry.message.role === "toolResult";

/**
 * The lookup steps from `leafId` up to the root of `entries`: runs of consecutive tool results
 * become one group. Undefined when `leafId` is not in `entries`.
 *
 * With `withBatchResults`, when everything stored below the leaf is tool results (a batch in
 * progress: the leaf is its assistant entry or one of its results), those results join the
 * leaf's group: a result is stored only after its call's snapshot, so a worker taking the
 * workspace over in the middle of a batch restores the changes of every call whose result is
 * stored (the calls then adopt those results instead of running again). Anything else below the
 * leaf (a later turn, the entry a branch to it writes) means the leaf is not a batch in progress,
 * and only its own ancestry counts.
 */
export function snapshotAncestry(
  entries: readonly SessionEntry[],
  leafId: string,
  { withBatchResults = false }: { withBatchResults?: boolean } = {},
): AncestryStep[] | undefined {
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  const leaf = byId.get(leafId);
  if (!leaf) return undefined;
  const steps: AncestryStep[] = [];
  let group = withBatchResults ? batchResultsBelow(entries, leafId) : [];
  const seen = new Set<string>();
  for (let entry: SessionEntry | undefined = leaf; entry && !seen.has(entry.id); ) {
    seen.add(entry.id);
    if (isToolResult(entry)) group.push(entry.id);
    else {
      if (group.length > 0) steps.push(group);
      group = [];
      steps.push(entry.id);
    }
    entry = entry.parentId === null ? undefined : byId.get(entry.parentId);
  }
  if (group.length > 0) steps.push(group);
  return steps;
}

/** Ids of the entries below `leafId` when all are tool results; empty otherwise. */
function batchResultsBelow(entries: readonly SessionEntry[], leafId: string): string[] {
  const below = new Set([leafId]);
  const results: string[] = [];
  // Entries are in seq order and a parent is stored before its children.
  for (const entry of entries) {
    if (entry.parentId === null || !below.has(entry.parentId) || below.has(entry.id)) continue;
    if (!isToolResult(entry)) return [];
    below.add(entry.id);
    results.push(entry.id);
  }
  return results;
}

/** How many fork generations a snapshot lookup climbs (a guard against a header cycle). */
const MAX_FORK_DEPTH = 64;

/**
 * The snapshot that applies to the entry whose ancestry is given, and the session it belongs to:
 * the nearest snapshotted ancestor (of a group, the newest: see `AncestryStep`) in `ref`'s own
 * snapshots, else in the session it was forked from (header `parentSession`), and so on up the
 * forks. A fork keeps its parent's entry ids, so
 * until it records its own snapshots (and for entries before its fork point) its ancestors'
 * snapshots apply — also when an intermediate fork never ran. A fork ancestor that cannot be read
 * (deleted) ends the climb.
 */
export async function snapshotForAncestry(
  store: SessionStore,
  snapshots: WorkspaceSnapshots,
  ref: SessionRef,
  ancestry: readonly AncestryStep[],
): Promise<{ from: SessionRef; record: SnapshotRecord } | undefined> {
  const visited = new Set<string>();
  for (let from: SessionRef | undefined = ref; from && visited.size < MAX_FORK_DEPTH; ) {
    if (visited.has(from.sessionId)) return undefined;
    visited.add(from.sessionId);
    const record = await snapshots.findForEntry(from, ancestry);
    if (record) return { from, record };
    const header: SessionHeader | undefined = await store.getHeader(from).catch(() => undefined);
    from = header?.parentSession ? { tenantId: ref.tenantId, sessionId: header.parentSession } : undefined;
  }
  return undefined;
}
