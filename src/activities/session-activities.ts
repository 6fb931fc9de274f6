/** Session writes the workflow needs directly: opening a session and appending entries it built. */
import { randomBytes } from "node:crypto";
import type {
  AppendEntriesInput,
  AppendEntriesResult,
  OpenSessionInput,
  OpenSessionResult,
} from "../contracts/activities";
import { storeWriteFailures } from "../contracts/store-failures";
import { createSessionHeader } from "../core/session-entries";
import { planSessionRepair } from "../core/session-repair";
import type { SessionEntry } from "../core/session-types";
import type { ActivityDeps } from "./deps";

export function sessionActivities({ store, webhooks }: ActivityDeps) {
  /** The event types the run emits: those the tenant's endpoints take; a sub-agent emits none. */
  async function webhookEventsOf(input: OpenSessionInput): Promise<{ webhookEvents?: string[] }> {
    if (!webhooks || input.parentSession !== undefined) return {};
    const types = await webhooks.store.subscribedTypes(input.tenantId);
    return types.length > 0 ? { webhookEvents: types } : {};
  }

  return {
    /**
     * Creates the session if new (header), repairs what an earlier run left open (gaps, tool
     * calls without results, an unanswered user message: see core/session-repair), and says where
     * its next entry goes.
     */
    async openSession(input: OpenSessionInput): Promise<OpenSessionResult> {
      const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
      const { created } = await store.createSession(
        ref,
        createSessionHeader(input.sessionId, new Date().toISOString(), input.cwd, input.parentSession),
      );
      // A session created just now has no entries: nothing to read or repair.
      const subscribed = await webhookEventsOf(input);
      if (created) return { nextSeq: 0, leafId: null, created: true, ...subscribed };
      const { entries } = await store.readEntries(ref);
      const repairs = planSessionRepair(entries, {
        makeId: () => randomBytes(8).toString("hex"),
        now: Date.now(),
      });
      for (const write of repairs)
        await storeWriteFailures(() => store.putEntry(ref, write.seq, write.entry));
      const all = [...entries, ...repairs];
      const leaf = all.reduce<(typeof all)[number] | undefined>(
        (last, item) => (last === undefined || item.seq > last.seq ? item : last),
        undefined,
      );
      return { nextSeq: leaf ? leaf.seq + 1 : 0, leafId: leaf ? leaf.entry.id : null, ...subscribed };
    },

    /**
     * Writes entries at their sequence numbers, in order; entries already stored are adopted, and
     * the adopted tool results that are errors named (the run's events then say what is stored).
     */
    async appendEntries(input: AppendEntriesInput): Promise<AppendEntriesResult> {
      const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
      const adoptedSeqs: number[] = [];
      const adoptedErrorSeqs: number[] = [];
      for (const write of input.writes) {
        const result = await storeWriteFailures(() => store.putEntry(ref, write.seq, write.entry));
        if (result.written) continue;
        adoptedSeqs.push(write.seq);
        if (isErrorResult(result.entry)) adoptedErrorSeqs.push(write.seq);
      }
      return {
        written: input.writes.length - adoptedSeqs.length,
        adopted: adoptedSeqs.length,
        adoptedSeqs,
        ...(adoptedErrorSeqs.length > 0 ? { adoptedErrorSeqs } : {}),
      };
    },
  };
}

/** Whether `entry` is a tool result that reports an error. */
function isErrorResult(entry: SessionEntry): boolean {
  return entry.type === "message" && entry.message.role === "toolResult" && entry.message.isError;
}
