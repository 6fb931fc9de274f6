/**
 * A fork: a new session holding the path root → an entry of another session (ids kept, so the
 * workspace lookups find the source's snapshots), its header naming the source as
 * `parentSession`. Tool calls left unanswered at the fork point get error results saying they
 * were not run here (`closeForkedPath`), so the fork keeps the tool-call invariant. Used by the
 * fork route and by an eval's trials (one mechanism).
 */

import { createSessionHeader } from "../core/session-entries";
import { closeForkedPath } from "../core/session-repair";
import { indexSession, pathToRoot } from "../core/session-tree";
import type { SessionEntry, SessionHeader } from "../core/session-types";
import type { SessionRef } from "./session-keys";
import type { SessionStore } from "./session-store";

export interface ForkOptions {
  /** Ids of the closing results (the caller's random source; a seeded one makes a retry write the same). */
  makeId: (taken: ReadonlySet<string>) => string;
  now: number;
  /** A retry of this very fork (same target, same source) finishes it instead of failing. */
  resume?: boolean;
}

/** The source's path root → `entryId`; empty when the session has no such entry. */
export async function pathTo(store: SessionStore, ref: SessionRef, entryId: string): Promise<SessionEntry[]> {
  const { entries } = await store.readEntries(ref, { untilGap: true });
  return pathToRoot(indexSession(entries.map((stored) => stored.entry)).byId, entryId);
}

/**
 * Stores the fork of `source` at `entryId` as session `target` (same tenant), keeping the
 * source's header fields but its id and parent. Undefined when the source has no such entry.
 */
export async function forkSession(
  store: SessionStore,
  source: SessionRef,
  entryId: string,
  target: SessionRef,
  options: ForkOptions,
): Promise<{ entryCount: number; leafId: string } | undefined> {
  const path = await pathTo(store, source, entryId);
  if (path.length === 0) return undefined;
  const taken = new Set(path.map((entry) => entry.id));
  const closing = closeForkedPath(path, {
    makeId: () => {
      const id = options.makeId(taken);
      taken.add(id);
      return id;
    },
    now: options.now,
  });
  const sourceHeader = await store.getHeader(source);
  const header: SessionHeader = sourceHeader
    ? { ...sourceHeader, id: target.sessionId, parentSession: source.sessionId }
    : createSessionHeader(target.sessionId, new Date(options.now).toISOString(), "", source.sessionId);
  const entries = [...path, ...closing];
  await store.importEntries(target, header, entries, { resume: options.resume ?? false });
  return { entryCount: entries.length, leafId: entries.at(-1)?.id ?? entryId };
}
