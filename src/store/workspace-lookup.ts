/**
 * Which workspace snapshot applies to an entry, across forks: used by the workspace activities
 * (claim, restore, tool calls on a worker without the workspace) and by the export with workspace.
 */
import type { SessionHeader } from "../core/session-types";
import type { SessionRef } from "./session-keys";
import type { SessionStore } from "./session-store";
import type { SnapshotRecord, WorkspaceSnapshots } from "./workspace-snapshots";

/** How many fork generations a snapshot lookup climbs (a guard against a header cycle). */
const MAX_FORK_DEPTH = 64;

/**
 * The snapshot that applies to the entry whose ancestry is given, and the session it belongs to:
 * the nearest snapshotted ancestor in `ref`'s own snapshots, else in the session it was forked
 * from (header `parentSession`), and so on up the forks. A fork keeps its parent's entry ids, so
 * until it records its own snapshots (and for entries before its fork point) its ancestors'
 * snapshots apply — also when an intermediate fork never ran. A fork ancestor that cannot be read
 * (deleted) ends the climb.
 */
export async function snapshotForAncestry(
  store: SessionStore,
  snapshots: WorkspaceSnapshots,
  ref: SessionRef,
  ancestry: readonly string[],
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
