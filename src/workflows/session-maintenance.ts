/**
 * Short workflows that change a session while no run is live: compaction, branching and labels.
 * They use the session's run workflow id, so Temporal itself keeps them and runs from overlapping.
 */
import type { EntrySlot } from "../contracts/activities";
import { DEFAULT_RUN_SETTINGS, type SessionRef, sessionCwd } from "../contracts/runs";
import { makeEntryId } from "../core/ids";
import { createLabelEntry } from "../core/session-entries";
import { PATCHES, takesPatch } from "./patches";
import {
  claim,
  isScheduleToStartTimeout,
  llmActivities,
  MAX_WORKSPACE_MOVES,
  snapshotActivities,
  storage,
} from "./run/activity-options";

/** Model calls (summaries), with a run's model-call timeouts and retries. */
const models = llmActivities(DEFAULT_RUN_SETTINGS.timeouts);

export interface CompactSessionInput extends SessionRef {
  model: string;
  instructions?: string;
  reserveTokens: number;
  keepRecentTokens: number;
}

export interface CompactSessionResult {
  compacted: boolean;
  reason: string;
  tokensBefore: number;
  entryId?: string;
}

/** The session's cursor and a slot at its end whose parent is `parentId` (default: the leaf). */
async function slotAtEnd(ref: SessionRef, parentId?: string) {
  const cursor = await storage.openSession({ ...ref, cwd: sessionCwd(ref) });
  const slot: EntrySlot = {
    seq: cursor.nextSeq,
    id: makeEntryId(Math.random),
    parentId: parentId ?? cursor.leafId,
    timestamp: new Date().toISOString(),
  };
  return { cursor, slot };
}

export async function compactSession(input: CompactSessionInput): Promise<CompactSessionResult> {
  const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
  const { slot } = await slotAtEnd(ref);
  const result = await models.compact({
    ...ref,
    model: input.model,
    reserveTokens: input.reserveTokens,
    keepRecentTokens: input.keepRecentTokens,
    slot,
    instructions: input.instructions,
  });
  return { ...result, ...(result.compacted ? { entryId: slot.id } : {}) };
}

export interface BranchSessionInput extends SessionRef {
  /** The entry that becomes the new leaf's parent. */
  entryId: string;
  summarize: boolean;
  model: string;
  instructions?: string;
}

export interface BranchSessionResult {
  /** The marker or branch summary entry: the session's new leaf. */
  leafId: string;
  summarized: boolean;
}

export async function branchSession(input: BranchSessionInput): Promise<BranchSessionResult> {
  const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
  const { cursor, slot } = await slotAtEnd(ref, input.entryId);
  const result = await models.branch({
    ...ref,
    model: input.model,
    oldLeafId: cursor.leafId,
    slot: { ...slot, parentId: input.entryId },
    summarize: input.summarize,
    instructions: input.instructions,
  });
  if (takesPatch(PATCHES.branchRestoresWorkspace)) {
    // Going back in the conversation goes back in the files: the workspace as it was at the entry
    // (its nearest snapshot), on the worker that holds it.
    for (let moves = 0; ; moves++) {
      const claimed = await claim.claimWorkspace({ ...ref, leafId: input.entryId });
      // A worker that did not hold the workspace restored that very state while claiming it.
      if (claimed.restoredFrom !== undefined) break;
      try {
        await snapshotActivities(claimed.taskQueue, DEFAULT_RUN_SETTINGS.timeouts).restoreWorkspace({
          ref,
          entryId: input.entryId,
        });
        break;
      } catch (error) {
        // The holder is gone: claim again, and the claiming worker restores the entry's state.
        const moved =
          isScheduleToStartTimeout(error) &&
          moves < MAX_WORKSPACE_MOVES &&
          takesPatch(PATCHES.branchRestoreMovesWorkspace);
        if (!moved) throw error;
      }
    }
  }
  return { leafId: result.entryId, summarized: result.summarized };
}

export interface LabelSessionInput extends SessionRef {
  /** The entry the label names (the caller checked that the session has it). */
  targetId: string;
  /** The label; absent clears the entry's label. */
  label?: string;
}

export interface LabelSessionResult {
  /** The label entry: the session's new leaf. */
  entryId: string;
}

/** Appends a label entry at the slot after the session's leaf (a retry adopts the stored entry). */
export async function labelSession(input: LabelSessionInput): Promise<LabelSessionResult> {
  const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
  const { slot } = await slotAtEnd(ref);
  const { seq, ...placement } = slot;
  const entry = createLabelEntry(placement, input.targetId, input.label);
  await storage.appendEntries({ ...ref, writes: [{ seq, entry }] });
  return { entryId: slot.id };
}
