/**
 * A run paused at a budget. It pauses only at a turn boundary (no model call or tool call in
 * flight: nothing is cut off or lost), shows itself paused (status `paused` in its state, its
 * `KeelStatus` search attribute and its current details, a `run_paused` event) and waits for a
 * `budget` signal that lifts it, an abort, or its pause timeout. A run paused at its tenant's
 * budget asks the tenant's usage again from time to time, and at once on a resume, and goes on
 * when the tenant is under budget. A paused run holds no worker: a worker that dies meanwhile is
 * replaced by any other, which waits on the same timer.
 */
import { CancellationScope, condition, log, workflowInfo } from "@temporalio/workflow";
import type { PauseReason } from "../../contracts/runs";
import { PATCHES, takesPatch } from "../patches";
import { replies, storage } from "./activity-options";
import { budgetReached, describePause, pauseTimeoutMs } from "./budget";
import type { RunContext } from "./context";
import { setStatus } from "./lifecycle";
import { emit } from "./state";

/** How a pause ended: the budget no longer stops the run, an abort arrived, or it timed out. */
export type PauseOutcome = { kind: "resumed" } | { kind: "aborted" } | { kind: "timed_out"; reason: string };

/** Pauses the run for `reason` until it may go on, is aborted, or the pause times out. */
export async function pauseAtBudget(ctx: RunContext, reason: PauseReason): Promise<PauseOutcome> {
  const { run } = ctx;
  const message = describePause(reason);
  const timeoutMs = pauseTimeoutMs(run.settings.limits);
  const since = run.clock.now();
  run.pause = { reason, message, since, until: since + timeoutMs };
  setStatus(ctx, "paused");
  emit(run, { type: "run_paused", reason, message, until: run.pause.until });
  await announcePause(ctx);
  // Woken when the budget paused at no longer holds (lifted, or another one holds now).
  const lifted = () => run.abortReason !== undefined || budgetReached(run)?.type !== reason.type;
  const woke =
    reason.type === "tenantBudget"
      ? await untilTenantUnderBudget(ctx, lifted, run.pause.until)
      : await condition(lifted, timeoutMs);
  run.pause = undefined;
  if (run.abortReason !== undefined) return { kind: "aborted" };
  if (!woke) {
    return {
      kind: "timed_out",
      reason: `${message}; paused for ${Math.round(timeoutMs / 1000)} s without a raise or a resume`,
    };
  }
  const { limits } = run.settings;
  emit(run, { type: "run_resumed", maxCostUsd: limits.maxCostUsd, maxTokens: limits.maxTokens ?? 0 });
  setStatus(ctx, "running");
  return { kind: "resumed" };
}

/**
 * Waits while the tenant's budget holds the run: asks afresh every `recheckAfterMs` the worker
 * gave, and at once on a resume, until `lifted()` or `until` (epoch ms). False when it timed out.
 */
async function untilTenantUnderBudget(
  ctx: RunContext,
  lifted: () => boolean,
  until: number,
): Promise<boolean> {
  const { run } = ctx;
  for (;;) {
    const left = until - run.clock.now();
    if (left <= 0) return false;
    const recheckAfterMs = run.tenantBudget?.recheckAfterMs ?? left;
    await condition(() => lifted() || run.recheckTenantBudget === true, Math.min(left, recheckAfterMs));
    if (lifted()) return true;
    if (run.clock.now() >= until) return false;
    run.recheckTenantBudget = false;
    if (run.pause) run.pause.rechecking = true;
    run.tenantBudget = (await storage.checkTenantBudget({ tenantId: run.ref.tenantId })) ?? undefined;
    if (run.pause) run.pause.rechecking = false;
  }
}

/** Tells the chat thread the run came from that it paused, and how to go on (best effort). */
async function announcePause(ctx: RunContext): Promise<void> {
  const { run } = ctx;
  const target = run.settings.chatReply;
  if (!target || !run.pause || !takesPatch(PATCHES.pauseChatNotice, ctx.runVersion)) return;
  const pause = run.pause;
  try {
    await CancellationScope.nonCancellable(() =>
      replies.postPauseNotice({ ...run.ref, target, runId: workflowInfo().runId, pause }),
    );
  } catch (error) {
    // The pause stands; only the notice was lost (the API and the events still show it).
    log.warn("posting the pause to chat failed", { error: String(error) });
  }
}
