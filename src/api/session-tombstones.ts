/**
 * What `DELETE /v1/sessions/{id}` leaves behind so that nothing of the session stays readable: a
 * tombstone. The session's workflow histories are deleted from Temporal too, but that is
 * asynchronous and may fail (and Temporal's list of executions is eventually consistent); until
 * they are gone every route that reads a run (state, events, approvals) would otherwise still
 * answer from them. A session with a tombstone and no stored header is deleted unless a run
 * started after the deletion is live under its id (deletion is refused while a run is live, so
 * every run from before is closed; a run writes the header first thing, so a later one that
 * closed has one).
 *
 * Object: `{prefix}tenants/{tenantId}/deleted/{sessionId}.json` (beside, not inside, the
 * tenant's `sessions/` folder, so listings never see it).
 */
import { z } from "zod";
import type { JsonObjects } from "../store/json-objects";
import { assertValidRef, type SessionRef } from "../store/session-keys";

const SessionTombstoneSchema = z.object({ deletedAt: z.string() });
export type SessionTombstone = z.infer<typeof SessionTombstoneSchema>;

function tombstoneKey(objects: JsonObjects, ref: SessionRef): string {
  assertValidRef(ref);
  return `${objects.prefix}tenants/${ref.tenantId}/deleted/${ref.sessionId}.json`;
}

/** Records the deletion of `ref` (replacing an earlier tombstone of the same id). */
export async function recordDeletion(
  objects: JsonObjects,
  ref: SessionRef,
  tombstone: SessionTombstone,
): Promise<void> {
  await objects.overwrite(tombstoneKey(objects, ref), tombstone);
}

/** The tombstone of `ref`, or undefined when it was never deleted. */
export function readTombstone(objects: JsonObjects, ref: SessionRef): Promise<SessionTombstone | undefined> {
  return objects.read(tombstoneKey(objects, ref), SessionTombstoneSchema);
}
