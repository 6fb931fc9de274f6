/**
 * What the import, fork and replay routes share: a new session made from entries, with fresh entry
 * ids where needed, and a fork of a session at an entry.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { SessionRef } from "../../contracts/runs";
import { makeUniqueEntryId, seededRandom } from "../../core/ids";
import { createSessionHeader } from "../../core/session-entries";
import { indexSession, pathToRoot, type SessionIndex } from "../../core/session-tree";
import type { SessionEntry, SessionHeader } from "../../core/session-types";
import { sha256Hex } from "../../store/digest";
import { forkSession } from "../../store/session-fork";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";

/** A uniform random number in [0, 1) from the system CSPRNG (entry ids of imports). */
export function secureRandom(): number {
  return randomBytes(6).readUIntBE(0, 6) / 2 ** 48;
}

/**
 * Stores a new session (a random id) holding `source`'s entries under `source`'s header with the
 * new id, or a fresh header; `parentSession` names the session it was forked from. A
 * `parentSession` the source's header names is dropped: an imported file could name any session
 * id, and the workspace lookups climb that link (a snapshot or a runner's stored workspace of the
 * named session would become this one's), so only the API sets it.
 */
export async function createSessionFrom(
  deps: RouteContext,
  tenantId: string,
  source: { header: SessionHeader | null; entries: SessionEntry[] },
  parentSession?: string,
  sessionId: string = randomUUID(),
) {
  const timestamp = new Date(deps.now()).toISOString();
  const header: SessionHeader = source.header
    ? {
        ...withoutParent(source.header),
        id: sessionId,
        ...(parentSession !== undefined ? { parentSession } : {}),
      }
    : createSessionHeader(sessionId, timestamp, "", parentSession);
  await deps.store.importEntries({ tenantId, sessionId }, header, source.entries);
  return { sessionId, entryCount: source.entries.length, leafId: source.entries.at(-1)?.id ?? null };
}

function withoutParent({
  parentSession: _dropped,
  ...header
}: SessionHeader): Omit<SessionHeader, "parentSession"> {
  return header;
}

/** The session's stored entries (the contiguous prefix while a run writes), indexed. */
export async function sessionIndexOf(deps: RouteContext, ref: SessionRef): Promise<SessionIndex> {
  const { entries } = await deps.store.readEntries(ref, { untilGap: true });
  return indexSession(entries.map((stored) => stored.entry));
}

/** The path root → `entryId` (entry-not-found when the session has no such entry). */
export function pathOrRefuse(index: SessionIndex, entryId: string): SessionEntry[] {
  const path = pathToRoot(index.byId, entryId);
  if (path.length === 0) throw new ProblemError("entry-not-found", `No entry ${JSON.stringify(entryId)}.`);
  return path;
}

/**
 * A new session holding `path` (root first; empty: no entries) of the session `ref`, header
 * `parentSession` = `ref`'s id (`forkSession`, the one fork). `sessionId` names the new session
 * (default: a random UUID); a named one is a keyed fork a retried request makes again: its closing
 * ids are seeded by the name, and a fork of `ref` already stored under it is finished, not refused.
 */
export async function forkAt(
  deps: RouteContext,
  ref: SessionRef,
  header: SessionHeader | undefined,
  path: SessionEntry[],
  sessionId?: string,
) {
  const target = { tenantId: ref.tenantId, sessionId: sessionId ?? randomUUID() };
  const random =
    sessionId === undefined
      ? secureRandom
      : seededRandom(Number.parseInt(sha256Hex(sessionId).slice(0, 8), 16));
  const created = await forkSession(deps.store, ref, header, path, target, {
    makeId: (taken) => makeUniqueEntryId(random, taken),
    now: deps.now(),
    resume: sessionId !== undefined,
  });
  return { sessionId: target.sessionId, ...created, parentSession: ref.sessionId };
}
