/**
 * Failover of a turn's model call, as pure decisions: the models a turn tries, in order, and
 * whether a failed call goes to the next one (docs/providers.md, "Failover"). No Temporal API
 * beyond the failure classes: unit-tested without a server, and a replay decides the same.
 *
 * A turn always starts from the run's first model (`next.model`); a provider whose circuit
 * breaker is open answers at once without a request (`circuit_open`), so the turn goes on to the
 * next model, and comes back to the first once its provider recovered. The next model's entries
 * take fresh slots (never the failed call's, which a late attempt of it may still write).
 */
import { ActivityFailure, ApplicationFailure } from "@temporalio/common";
import type { EntrySlot, EntryWrite, ModelCallFailureDetails } from "../../contracts/activities";
import { FailureType } from "../../core/failure-types";
import { unansweredAssistant, unaskedModelChange } from "./entries";
import type { RunRecord } from "./state";

/** The models a turn tries, in order: the run's next model, then its fallbacks (each once). */
export function turnModels(run: Pick<RunRecord, "next" | "settings">): string[] {
  return [...new Set([run.next.model, ...(run.settings.fallbackModels ?? [])])];
}

/** The model the session is on: the one that answered last in this run, or the run's next model. */
export function sessionModel(run: Pick<RunRecord, "next" | "activeModel">): string {
  return run.activeModel ?? run.next.model;
}

/** Why a model call's failure sends the turn to the next model, and what the call answered. */
export interface FailoverCause {
  reason: string;
  message: string;
}

/**
 * The failover cause of a failed model call, or undefined for a failure no other model would fix
 * (a refused request, a cancellation, a bug). A provider error that spent its retries fails over
 * whatever its details say (an activity from before failover sends none).
 */
export function failoverCauseOf(error: unknown): FailoverCause | undefined {
  if (!(error instanceof ActivityFailure)) return undefined;
  const cause = error.cause;
  if (!(cause instanceof ApplicationFailure) || cause.type !== FailureType.retryableLlm) return undefined;
  const details = cause.details?.[0] as ModelCallFailureDetails | undefined;
  return { reason: details?.failover ?? "retries_exhausted", message: cause.message };
}

/** Why a run whose every model failed ends: each model and what it answered. */
export function allModelsFailedReason(failures: readonly { model: string; cause: FailoverCause }[]): string {
  return `every model failed: ${failures.map(({ model, cause }) => `${model} (${cause.reason}): ${cause.message}`).join("; ")}`;
}

/**
 * The entries that close a call the turn failed over from, at that call's own slots (never handed
 * out again): its switch, if it was one, and a failed answer saying why. They go with the next
 * call's first writes; a partial answer an attempt of the failed call stored first is kept.
 */
export function failedOverWrites(
  call: { modelChange?: EntrySlot | undefined; slot: EntrySlot; model: string },
  cause: FailoverCause,
  now: number,
): EntryWrite[] {
  return [
    ...(call.modelChange ? [unaskedModelChange(call.modelChange, call.model)] : []),
    unansweredAssistant(
      call.slot,
      call.model,
      { stopReason: "error", errorMessage: `failed over (${cause.reason}): ${cause.message}` },
      now,
    ),
  ];
}
