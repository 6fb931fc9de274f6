/**
 * The compaction activity: plans the cut (never between a tool call and its result), asks the
 * model for a structured summary and writes the compaction entry at the assigned slot.
 */
import { ApplicationFailure, Context } from "@temporalio/activity";
import type { CompactInput, CompactResult } from "../contracts/activities";
import { storeWriteFailures } from "../contracts/store-failures";
import {
  buildCompactionRequests,
  compactionEntryFor,
  prepareCompaction,
  type SummaryRequest,
} from "../core/compaction";
import { FailureType } from "../core/failure-types";
import type { ModelInfo, Provider } from "../providers/types";
import { entriesBefore, pathOf } from "./conversation";
import type { ActivityDeps } from "./deps";
import { whileHeartbeating } from "./heartbeat";
import { providerErrorFailure, tallyBefore } from "./llm-retry";

export function compactActivity({ store, provider, catalog }: ActivityDeps) {
  return async function compact(input: CompactInput): Promise<CompactResult> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const stored = await store.getEntry(ref, input.slot.seq);
    if (stored?.type === "compaction" && stored.id === input.slot.id) {
      return { compacted: true, reason: "already compacted", tokensBefore: stored.tokensBefore };
    }
    const model = catalog.find(input.model);
    if (!model)
      throw ApplicationFailure.nonRetryable(
        catalog.unknownModelMessage(input.model),
        FailureType.unknownModel,
      );
    const entries = await entriesBefore(store, ref, input.slot.seq);
    const preparation = prepareCompaction(pathOf(entries, input.slot.parentId), {
      reserveTokens: input.reserveTokens,
      keepRecentTokens: input.keepRecentTokens,
    });
    if (
      !preparation ||
      preparation.messagesToSummarize.length + preparation.turnPrefixMessages.length === 0
    ) {
      return {
        compacted: false,
        reason: "nothing old enough to summarize",
        tokensBefore: preparation?.tokensBefore ?? 0,
      };
    }
    const requests = buildCompactionRequests(preparation, input.instructions);
    const history = await summarizeWith(provider, model, requests.history);
    const prefix = requests.turnPrefix
      ? await summarizeWith(provider, model, requests.turnPrefix)
      : undefined;
    await storeWriteFailures(() =>
      store.putEntry(ref, input.slot.seq, compactionEntryFor(input.slot, preparation, history, prefix)),
    );
    return { compacted: true, reason: "summarized", tokensBefore: preparation.tokensBefore };
  };
}

/** The model's text answer to a summary request; provider errors become retryable or final failures. */
export async function summarizeWith(
  provider: Provider,
  model: ModelInfo,
  request: SummaryRequest,
): Promise<string> {
  const ctx = Context.current();
  const carried = tallyBefore(ctx);
  // A summary can take a while before its first token: heartbeat while waiting.
  const { message, error } = await whileHeartbeating(
    ctx,
    "summarizing",
    (heartbeat) =>
      provider.complete(
        model,
        {
          systemPrompt: request.systemPrompt,
          messages: [{ role: "user", content: request.prompt, timestamp: Date.now() }],
        },
        { maxTokens: request.maxTokens, signal: ctx.cancellationSignal, onProgress: () => heartbeat() },
      ),
    carried,
  );
  if (error)
    throw providerErrorFailure(ctx, carried, `summary by ${model.id} failed: ${error.message}`, error)
      .failure;
  return message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
}
