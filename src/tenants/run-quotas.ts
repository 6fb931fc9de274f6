/**
 * A tenant's quotas around a run start, wherever a start comes from (the API, a Slack thread, a
 * schedule's firing): the quota gate built on the tenant store, usage and Temporal's view of each
 * session's run, and what holds a concurrency slot (docs/api.md, "Quotas").
 */
import { type WorkflowHandle, WorkflowNotFoundError } from "@temporalio/client";
import type { SessionRef } from "../contracts/runs";
import { WorkflowType } from "../workflows/references";
import { type Admission, CLAIM_GRACE_MS, QuotaExceededError, QuotaGate, type SlotClaim } from "./admission";
import type { TenantStore } from "./store";
import type { Quotas } from "./types";

/** What the quota gate asks of Temporal: a session's run, to describe (RunClient is one). */
export interface SessionRunHandles {
  handle(ref: SessionRef): Pick<WorkflowHandle, "describe">;
}

import { type TenantUsage, tenantBudgetState } from "./usage";

/** The quota gate of the tenants in `store`: slots held by live runs, budgets from `usage`. */
export function quotaGate(
  store: TenantStore,
  usage: TenantUsage,
  runs: () => Promise<SessionRunHandles>,
): QuotaGate {
  return new QuotaGate({
    store,
    isHeld: async (tenantId, claim) => claimHeld(await runs(), tenantId, claim, Date.now()),
    checkBudget: async (tenantId, quotas) => {
      const budget = await tenantBudgetState(usage, tenantId, quotas);
      if (budget.reached !== undefined)
        throw new QuotaExceededError(
          budget.reached,
          quotas[budget.reached] ?? 0,
          budget.resetsInSeconds ?? 60,
        );
    },
  });
}

/**
 * Admits the start of `ref`'s run under `quotas`; undefined when there are none or the session's
 * run is live (the message then reaches that run: a delivery, not a start). Throws
 * QuotaExceededError having taken nothing.
 */
export async function admitRunStart(
  gate: QuotaGate,
  quotas: Quotas | undefined,
  ref: SessionRef,
  runs: SessionRunHandles,
): Promise<Admission | undefined> {
  if (quotas === undefined || Object.keys(quotas).length === 0) return undefined;
  if (await sessionRunIsLive(runs, ref)) return undefined;
  return gate.admit(ref.tenantId, ref.sessionId, quotas);
}

/**
 * Whether the session's run is live: Temporal describes an open agent-run workflow under its id
 * (from the workflow's mutable state, not from visibility). What holds a concurrency slot.
 */
async function sessionRunIsLive(runs: SessionRunHandles, ref: SessionRef): Promise<boolean> {
  try {
    const description = await runs.handle(ref).describe();
    return description.status.name === "RUNNING" && description.type === WorkflowType.agentRun;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/**
 * Whether a concurrency slot's claim still holds: its session's run is live, or no run of the
 * session closed after the claim and the claim is younger than CLAIM_GRACE_MS (its start may be
 * under way). A released claim (claimedAt 0) holds only while a run of the session is live.
 */
async function claimHeld(
  runs: SessionRunHandles,
  tenantId: string,
  claim: SlotClaim,
  now: number,
): Promise<boolean> {
  let description: Awaited<ReturnType<ReturnType<SessionRunHandles["handle"]>["describe"]>> | undefined;
  try {
    description = await runs.handle({ tenantId, sessionId: claim.sessionId }).describe();
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
  if (description?.status.name === "RUNNING")
    return description.type === WorkflowType.agentRun || now - claim.claimedAt < CLAIM_GRACE_MS;
  const closedAfterClaim = (description?.closeTime?.getTime() ?? 0) > claim.claimedAt;
  return !closedAfterClaim && now - claim.claimedAt < CLAIM_GRACE_MS;
}
