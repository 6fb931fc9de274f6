/**
 * Search attributes Keel sets on run workflows (tenant, session, status, model). Only ids and
 * enums: never prompt text or secrets. Registered by the local stack; on a real cluster with
 * `temporal operator search-attribute create` (docs/deploy.md).
 */
import { defineSearchAttributeKey, SearchAttributeType } from "@temporalio/common";

export const TenantAttribute = defineSearchAttributeKey("KeelTenant", SearchAttributeType.KEYWORD);
export const SessionAttribute = defineSearchAttributeKey("KeelSession", SearchAttributeType.KEYWORD);
export const RunStatusAttribute = defineSearchAttributeKey("KeelStatus", SearchAttributeType.KEYWORD);
export const ModelAttribute = defineSearchAttributeKey("KeelModel", SearchAttributeType.KEYWORD);

export const keelSearchAttributes = [TenantAttribute, SessionAttribute, RunStatusAttribute, ModelAttribute];
