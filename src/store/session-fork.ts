/**
 * A fork: a new session holding the path root → an entry of another session (ids kept, so the
 * workspace lookups find the source's snapshots), its header naming the source as
 * `parentSession`. Tool calls left unanswered at the fork point get error results saying they
 * were not run here (`closeForkedPath`), so the fork keeps the tool-call invariant. The one
 * implementation behind the fork and replay routes and an eval's trials.
 */

import { createSessionHeader } from "../core/session-entries";
import { closeForkedPath } from "../core/session-repair";
import { indexSession, pathToRoot } from "../core/session-tree";
import type { SessionEntry, SessionHeader } from "../core/session-types";
import type { SessionRef } from "./session-keys";
import type { SessionStore } from "./session-store";

export interface ForkOptions {
  /** Ids of the closing results, unique among `taken` (seeded by the caller to make a retry write the same ones). */
  makeId: (taken: ReadonlySet<string>) => string;
  now: number;
  /**
   * A retry of this very fork (same target, same source): a stored fork of the same source is
   * finished instead of refused. Without it, an existing target is `SessionExistsError`.
   */
  resume?: boolean;
}

/** The source's path root → `entryId`; empty when the session has no such entry. */
export async function pathTo(store: SessionStore, ref: SessionRef, entryId: string): Promise<SessionEntry[]> {
  const { entries } = await store.readEntries(ref, { untilGap: true });
  return pathToRoot(indexSession(entries.map((stored) => stored.entry)).byId, entryId);
}

/**
 * Stores `path` (root first; empty: a fork of the session's start) of session `source`, whose
 * header is `sourceHeader`, as the new session `target` (same tenant): the source's header
 * fields but for its id, with `parentSession` = the source.
 */
export async function forkSession(
  store: SessionStore,
  source: SessionRef,
  sourceHeader: SessionHeader | undefined,
  path: readonly SessionEntry[],
  target: SessionRef,
  options: ForkOptions,
): Promise<{ entryCount: number; leafId: string | null }> {
  const taken = new Set(path.map((entry) => entry.id));
  const closing = closeForkedPath(path, {
    makeId: () => {
      const id = options.makeId(taken);
      taken.add(id);
      return id;
    },
    now: options.now,
  });
  const header: SessionHeader = sourceHeader
    ? { ...sourceHeader, id: target.sessionId, parentSession: source.sessionId }
    : createSessionHeader(target.sessionId, new Date(options.now).toISOString(), "", source.sessionId);
  const entries = [...path, ...closing];
  await store.importEntries(target, header, entries, { resume: options.resume ?? false });
  return { entryCount: entries.length, leafId: entries.at(-1)?.id ?? null };
}
