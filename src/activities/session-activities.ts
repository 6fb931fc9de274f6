/** Session writes the workflow needs directly: opening a session and appending entries it built. */
import { createSessionHeader } from "../core/session-entries";
import type { SessionCursor } from "../workflows/types";
import type { ActivityDeps } from "./deps";
import type { AppendEntriesInput, AppendEntriesResult, OpenSessionInput } from "./types";

export function sessionActivities({ store }: ActivityDeps) {
  return {
    /** Creates the session if new (header), and says where its next entry goes. */
    async openSession(input: OpenSessionInput): Promise<SessionCursor> {
      const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
      await store.createSession(
        ref,
        createSessionHeader(input.sessionId, new Date().toISOString(), input.cwd),
      );
      const { entries, nextSeq } = await store.readEntries(ref, { untilGap: true });
      const leaf = entries[entries.length - 1];
      return { nextSeq, leafId: leaf ? leaf.entry.id : null };
    },

    /** Writes entries at their sequence numbers, in order; entries already stored are adopted. */
    async appendEntries(input: AppendEntriesInput): Promise<AppendEntriesResult> {
      const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
      let written = 0;
      for (const write of input.writes) {
        const result = await store.putEntry(ref, write.seq, write.entry);
        if (result.written) written += 1;
      }
      return { written, adopted: input.writes.length - written };
    },
  };
}
