/**
 * Who may give tool processes the worker's own network (`network: "full"`): an operator setting,
 * KEEL_SANDBOX_NETWORK_FULL, read by the API (which refuses such a run with a 400) and by the
 * worker (which refuses the call, running nothing). "full" reaches everything the worker reaches:
 * its loopback services (Temporal, S3, their UIs) and, on EC2, the instance metadata endpoint.
 */
import { isValidId } from "../core/ids";

/** Nobody (default), every tenant, or the listed tenants. */
export type FullNetworkAccess = "off" | "on" | { tenants: readonly string[] };

const FULL_NETWORK_SETTING = "KEEL_SANDBOX_NETWORK_FULL";

/** Parses the setting: `off`, `on`, or comma-separated tenant ids. Throws naming the setting. */
export function parseFullNetworkAccess(value: string | undefined): FullNetworkAccess {
  const text = (value ?? "off").trim();
  if (text === "off" || text === "") return "off";
  if (text === "on") return "on";
  // A boolean-looking value would otherwise name a tenant called "true".
  if (/^(true|false|yes|no|1|0)$/i.test(text))
    throw new Error(
      `${FULL_NETWORK_SETTING}: use "on" or "off" (or tenant ids), not ${JSON.stringify(text)}`,
    );
  const tenants = text
    .split(",")
    .map((id) => id.trim())
    .filter(Boolean);
  const invalid = tenants.filter((id) => !isValidId(id));
  if (invalid.length > 0)
    throw new Error(
      `${FULL_NETWORK_SETTING}: must be "off", "on" or comma-separated tenant ids; not tenant ids: ${invalid.map((id) => JSON.stringify(id)).join(", ")}`,
    );
  return { tenants };
}

/** Whether `tenantId` may run tool processes with network "full" (false without a tenant). */
export function fullNetworkAllowed(access: FullNetworkAccess, tenantId: string | undefined): boolean {
  if (access === "on") return true;
  if (access === "off" || tenantId === undefined) return false;
  return access.tenants.includes(tenantId);
}

/** The refusal of a run or call asking for network "full" where it is not allowed. */
export const FULL_NETWORK_REFUSAL = `network "full" (the worker's own network, its loopback services included) is not enabled for this tenant on this deployment: the operator enables it with ${FULL_NETWORK_SETTING} (on, or a list of tenant ids). Use network "none".`;
