/**
 * A worker declared for one tenant (KEEL_SINGLE_TENANT, required with KEEL_SANDBOX=off) refuses
 * every activity of any other tenant before it touches a workspace, the store or a provider: an
 * unsandboxed tool command can read the worker's secrets and every workspace on its disk, so no
 * other tenant's session may ever reach it.
 */
import { ApplicationFailure } from "@temporalio/activity";
import type { KeelActivities } from "../contracts/activities";
import { FailureType } from "../core/failure-types";

/**
 * Every tenant id an activity input names: its own `tenantId` and that of any session ref it
 * carries (`ref`, `from` of a restore).
 */
function tenantsNamedBy(input: unknown): string[] {
  if (typeof input !== "object" || input === null) return [];
  const tenants: string[] = [];
  const own = (input as { tenantId?: unknown }).tenantId;
  if (typeof own === "string") tenants.push(own);
  for (const value of Object.values(input)) {
    const nested =
      typeof value === "object" && value !== null ? (value as { tenantId?: unknown }).tenantId : undefined;
    if (typeof nested === "string") tenants.push(nested);
  }
  return tenants;
}

/**
 * Throws a non-retryable `TenantNotServed` failure unless `input` names at least one tenant and
 * every tenant it names is `tenantId`.
 */
function assertServedTenant(tenantId: string, input: unknown): void {
  const named = tenantsNamedBy(input);
  const other = named.find((tenant) => tenant !== tenantId);
  if (named.length === 0 || other !== undefined) {
    throw ApplicationFailure.nonRetryable(
      `this worker serves tenant ${tenantId} only (KEEL_SINGLE_TENANT); refused a call for ${other ?? "no tenant"}`,
      FailureType.tenantNotServed,
    );
  }
}

/** `activities`, each refusing inputs of any tenant but `tenantId` (see `assertServedTenant`). */
export function servingOnlyTenant(tenantId: string, activities: KeelActivities): KeelActivities {
  const guarded = Object.entries(activities).map(([name, activity]) => [
    name,
    async (input: unknown) => {
      assertServedTenant(tenantId, input);
      return (activity as (input: unknown) => Promise<unknown>)(input);
    },
  ]);
  // Each entry keeps its activity's name and signature; only a check runs before it.
  return Object.fromEntries(guarded) as unknown as KeelActivities;
}
