/**
 * Schemas of the admin API (tenants, their keys and settings) and of usage reads: the same zod
 * schemas validate requests and make the OpenAPI document.
 */
import { z } from "@hono/zod-openapi";
import { regexes } from "zod/v4/core";
import { ID_PATTERN } from "../../core/ids";
import { QuotasSchema, SlackSettingsSchema } from "../../tenants/types";
import { type MessageBodyOptions, messageBodySchema } from "./message-body";

const TenantIdParamSchema = z
  .string()
  .regex(ID_PATTERN, `tenant ids match ${ID_PATTERN.source}`)
  .openapi({ param: { name: "tenantId", in: "path" }, example: "acme" });

export const TenantParamsSchema = z.object({ tenantId: TenantIdParamSchema });

export const KeyParamsSchema = z.object({
  tenantId: TenantIdParamSchema,
  keyId: z
    .string()
    .regex(/^key_[0-9a-f]{16}$/)
    .openapi({ param: { name: "keyId", in: "path" }, example: "key_0123456789abcdef" }),
});

export const CreateTenantBodySchema = z
  .object({ id: z.string().regex(ID_PATTERN), name: z.string().min(1).max(200).optional() })
  .openapi("CreateTenantRequest");

export const TenantViewSchema = z
  .object({ id: z.string(), name: z.string().optional(), createdAt: z.string() })
  .openapi("Tenant");

export const TenantListSchema = z.object({ tenants: z.array(TenantViewSchema) }).openapi("TenantList");

export const CreateKeyBodySchema = z
  .object({ label: z.string().min(1).max(200).optional() })
  .openapi("CreateApiKeyRequest");

const apiKeyFields = {
  id: z.string(),
  label: z.string().optional(),
  createdAt: z.string(),
  revokedAt: z.string().optional(),
};

export const ApiKeyViewSchema = z.object(apiKeyFields).openapi("ApiKey");

/** Not an extension of `ApiKey`: the document states one closed object either way. */
export const CreatedKeySchema = z
  .object({
    ...apiKeyFields,
    key: z
      .string()
      .openapi({ description: "The API key: shown in this answer only (only its sha256 is stored)" }),
  })
  .openapi("CreatedApiKey");

export const ApiKeyListSchema = z.object({ keys: z.array(ApiKeyViewSchema) }).openapi("ApiKeyList");

// Fresh objects of the OpenAPI-aware zod: the tenant store's schemas may be built before that zod
// is loaded (a module that imports the store first, e.g. a benchmark, would find no `.openapi`).
const QuotasViewSchema = z.object(QuotasSchema.shape).openapi("TenantQuotas", {
  description:
    "Limits checked before a run starts (absent: unlimited): live runs at once, runs started per UTC minute, tokens and cost (US dollars) per UTC day and month",
});

const SlackSettingsViewSchema = z.object(SlackSettingsSchema.shape).strict().openapi("TenantSlackSettings", {
  description:
    "Slack teams (workspace ids like T0123ABCD) whose threads start this tenant's runs, each with `allow` (tools used freely) and `ask` (tools whose every call waits for an approval); without lists, the read-only tools. A team belongs to one tenant only (409 `slack-team-taken` otherwise) and takes effect on every API instance within 5 s; a team in the operator's KEEL_SLACK_TEAMS is refused",
});

/** A tenant's default run settings: a message body's run settings, every field optional. */
export function tenantDefaultsSchema(options: MessageBodyOptions) {
  return messageBodySchema(options).omit({ text: true, delivery: true }).partial();
}

/** The settings body for a deployment (the defaults are checked against what it allows). */
export function tenantSettingsSchema(options: MessageBodyOptions) {
  return z
    .object({
      models: z.array(z.string().min(1).max(512)).max(200).optional().openapi({
        description:
          "Model ids or one-line specs the tenant may use (`*` matches any characters); absent: all",
      }),
      modelHosts: z.array(z.url().max(512)).max(100).optional().openapi({
        description:
          "Base URLs one-line models may name, each within what the operator allows (KEEL_MODEL_URLS, configured base URLs); absent: all the operator allows",
      }),
      defaults: tenantDefaultsSchema(options).optional().openapi({
        description:
          "Run settings applied under each message's own when it starts a run (the message's fields win); checked like a message's",
      }),
      quotas: QuotasViewSchema.optional(),
      slack: SlackSettingsViewSchema.optional(),
    })
    .strict()
    .openapi("TenantSettings");
}

/**
 * A real day, YYYY-MM-DD (2026-02-30 and 0000-00-00 are refused, 2024-02-29 is taken): zod's ISO
 * date check, declared as `format: date` and as the same check's pattern, since many validators
 * treat a format as a note only.
 */
const calendarDay = (description: string) =>
  z.iso.date().openapi({ pattern: regexes.date.source, description });

export const UsageQuerySchema = z.object({
  from: calendarDay("First UTC day (YYYY-MM-DD); default: 30 days before `to`").optional(),
  to: calendarDay("Last UTC day (YYYY-MM-DD), included; default: today").optional(),
});

const UsageDaySchema = z
  .object({
    day: z.string(),
    runs: z.number().int(),
    turns: z.number().int(),
    tokens: z.number().int(),
    costUsd: z.number(),
    toolSeconds: z.number(),
  })
  .openapi("TenantUsageDay");

export const UsageSchema = z
  .object({ tenantId: z.string(), from: z.string(), to: z.string(), days: z.array(UsageDaySchema) })
  .openapi("TenantUsage");
