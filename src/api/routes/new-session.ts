/** What the import and fork routes share: a new session made from entries, with fresh entry ids where needed. */
import { randomBytes, randomUUID } from "node:crypto";
import { createSessionHeader } from "../../core/session-entries";
import type { SessionEntry, SessionHeader } from "../../core/session-types";
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
) {
  const sessionId = randomUUID();
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
