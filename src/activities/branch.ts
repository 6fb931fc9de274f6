/**
 * The branch activity: moves a session's leaf to an earlier entry. Without a summary it writes a
 * leaf marker below the target; with one it asks the model to summarize the branch being left
 * (old leaf back to the common ancestor) and writes a branch_summary entry below the target.
 */
import { ApplicationFailure } from "@temporalio/activity";
import type { BranchInput, BranchResult } from "../contracts/activities";
import { entryConflict, storeWriteFailures } from "../contracts/store-failures";
import {
  buildBranchSummaryRequest,
  collectEntriesForBranchSummary,
  composeBranchSummary,
  EMPTY_BRANCH_SUMMARY,
  prepareBranchEntries,
} from "../core/branch-summary";
import { FailureType } from "../core/failure-types";
import { createBranchSummaryEntry, createLeafMarker } from "../core/session-entries";
import { summarizeWith } from "./compact";
import { entriesBefore } from "./conversation";
import type { ActivityDeps } from "./deps";

/** Token budget of the branch content sent for summarizing. */
const BRANCH_SUMMARY_INPUT_BUDGET = 24_000;

export function branchActivity({ store, provider, catalog }: ActivityDeps) {
  return async function branch(input: BranchInput): Promise<BranchResult> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const { slot, oldLeafId } = input;
    const stored = await store.getEntry(ref, slot.seq);
    if (stored) {
      if (stored.id !== slot.id) throw entryConflict("another entry took the branch slot");
      return { entryId: stored.id, summarized: stored.type === "branch_summary" };
    }
    const entries = await entriesBefore(store, ref, slot.seq);
    const byId = new Map(entries.map((entry) => [entry.id, entry]));
    if (!byId.has(slot.parentId)) {
      throw ApplicationFailure.nonRetryable(
        `entry ${slot.parentId} is not in this session`,
        FailureType.unknownEntry,
      );
    }
    if (!input.summarize) {
      await storeWriteFailures(() => store.putEntry(ref, slot.seq, createLeafMarker(slot)));
      return { entryId: slot.id, summarized: false };
    }
    const model = catalog.find(input.model);
    if (!model)
      throw ApplicationFailure.nonRetryable(
        catalog.unknownModelMessage(input.model),
        FailureType.unknownModel,
      );
    const left = collectEntriesForBranchSummary(byId, oldLeafId, slot.parentId);
    const prepared = prepareBranchEntries(left.entries, BRANCH_SUMMARY_INPUT_BUDGET);
    const request = buildBranchSummaryRequest(prepared, input.instructions);
    const summary = request
      ? composeBranchSummary(await summarizeWith(provider, model, request), prepared.fileDetails)
      : EMPTY_BRANCH_SUMMARY;
    await storeWriteFailures(() =>
      store.putEntry(ref, slot.seq, createBranchSummaryEntry(slot, summary, prepared.fileDetails)),
    );
    return { entryId: slot.id, summarized: true };
  };
}
