/**
 * Fairness between tenants on the shared task queues: every workflow Keel starts carries its
 * tenant as Temporal's fairness key (`priority.fairnessKey`). The activities and child workflows a
 * run schedules inherit it from the run (Temporal's rule for an unset key), so one tenant's burst
 * of runs shares each queue's dispatch with the other tenants in proportion to their weights (1
 * each) instead of queueing ahead of them. A server without fairness enabled ignores the key
 * (docs/deploy.md, "Fairness between tenants").
 */
import { createHash } from "node:crypto";
import type { Priority } from "@temporalio/common";

/** Temporal's limit on a fairness key, in bytes. */
const MAX_FAIRNESS_KEY_BYTES = 64;

/**
 * The fairness key of a tenant: its id, or, for an id longer than Temporal allows, a hash of it
 * (distinct tenants keep distinct keys).
 */
export function fairnessKey(tenantId: string): string {
  if (Buffer.byteLength(tenantId) <= MAX_FAIRNESS_KEY_BYTES) return tenantId;
  return `sha256:${createHash("sha256").update(tenantId).digest("hex").slice(0, 48)}`;
}

/** The `priority` of a workflow Keel starts for `tenantId`. */
export function tenantPriority(tenantId: string): Priority {
  return { fairnessKey: fairnessKey(tenantId) };
}
