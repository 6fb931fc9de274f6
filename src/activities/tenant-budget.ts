/**
 * The tenant budget activity: a run paused at its tenant's budget asks afresh whether the tenant
 * is still over it (tenants/budget-check.ts). Reads only; a failed read is retried by Temporal.
 */

import type { KeelActivities } from "../contracts/activities";
import type { ActivityDeps } from "./deps";

export function checkTenantBudgetActivity(deps: ActivityDeps): KeelActivities["checkTenantBudget"] {
  return async function checkTenantBudget({ tenantId }) {
    return (await deps.tenantBudget?.reached(tenantId, { fresh: true })) ?? null;
  };
}
