/**
 * Search attributes Keel sets on run workflows (tenant, session, status, model). Only ids and
 * enums: never prompt text or secrets. Registered by the local stack; on a real cluster with
 * `temporal operator search-attribute create` (docs/deploy.md).
 */
import { defineSearchAttributeKey, SearchAttributeType } from "@temporalio/common";
import type { RunInput, RunStatus } from "../contracts/runs";

export const TenantAttribute = defineSearchAttributeKey("KeelTenant", SearchAttributeType.KEYWORD);
export const SessionAttribute = defineSearchAttributeKey("KeelSession", SearchAttributeType.KEYWORD);
export const RunStatusAttribute = defineSearchAttributeKey("KeelStatus", SearchAttributeType.KEYWORD);
export const ModelAttribute = defineSearchAttributeKey("KeelModel", SearchAttributeType.KEYWORD);

export const keelSearchAttributes = [TenantAttribute, SessionAttribute, RunStatusAttribute, ModelAttribute];

/** One of a run's search attributes with its value (all of them are keywords). */
export interface RunAttributePair {
  key: typeof TenantAttribute;
  value: string;
}

/**
 * A run's search attributes. Its starter sets them (status `startedStatus(RUN_VERSION)`) and the
 * run sets them again at its start: the same pairs, so a run started with them upserts nothing
 * then.
 */
export function runAttributes(
  input: Pick<RunInput, "tenantId" | "sessionId" | "settings">,
  status: RunStatus,
): RunAttributePair[] {
  return [
    { key: TenantAttribute, value: input.tenantId },
    { key: SessionAttribute, value: input.sessionId },
    { key: ModelAttribute, value: input.settings.model },
    { key: RunStatusAttribute, value: status },
  ];
}
