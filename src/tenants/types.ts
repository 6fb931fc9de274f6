/**
 * What the tenant store keeps (docs/api.md, "Tenant administration"): tenants, their API keys
 * (only a sha256 digest of each key is stored; the key itself is shown once, when it is made) and
 * each tenant's settings (allowed models and one-line model hosts, default run settings, quotas).
 */
import { z } from "zod";
import { isValidId } from "../core/ids";
import { SLACK_TEAM_ID, SLACK_TEAM_ID_HINT, SlackTeamToolsSchema } from "./slack-team-tools";

export const TenantIdSchema = z
  .string()
  .refine(isValidId, "tenant ids match ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$");

export const TenantSchema = z.object({
  id: TenantIdSchema,
  /** A name for people; not an identifier. */
  name: z.string().max(200).optional(),
  createdAt: z.string(),
});
export type Tenant = z.infer<typeof TenantSchema>;

/** One API key of a tenant, as stored: never the key itself. */
export const ApiKeyRecordSchema = z.object({
  id: z.string(),
  label: z.string().max(200).optional(),
  /** Lowercase sha256 hex of the key. */
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.string(),
  revokedAt: z.string().optional(),
});
export type ApiKeyRecord = z.infer<typeof ApiKeyRecordSchema>;

/** `tenant-keys/{digest}.json`: which tenant and key record a digest belongs to (never changes). */
export const KeyPointerSchema = z.object({ tenantId: TenantIdSchema, keyId: z.string() });

/** Limits checked before a run starts (absent: unlimited). Costs in US dollars. */
export const QuotasSchema = z.object({
  concurrentRuns: z.number().int().min(0).max(10_000).optional(),
  runsPerMinute: z.number().int().min(0).max(100_000).optional(),
  tokensPerDay: z.number().int().min(0).optional(),
  tokensPerMonth: z.number().int().min(0).optional(),
  costPerDayUsd: z.number().min(0).optional(),
  costPerMonthUsd: z.number().min(0).optional(),
});
export type Quotas = z.infer<typeof QuotasSchema>;
export type QuotaName = keyof Quotas;

/**
 * The Slack teams (workspaces) whose threads start the tenant's runs, each with its tool lists. A
 * team belongs to one tenant at most (slack-teams.ts keeps the claim).
 */
/** Most Slack teams one tenant maps (each is a claim object written when the settings are). */
const MAX_SLACK_TEAMS = 100;

export const SlackSettingsSchema = z
  .object({
    teams: z
      .record(z.string().regex(SLACK_TEAM_ID, SLACK_TEAM_ID_HINT), SlackTeamToolsSchema)
      .refine((teams) => Object.keys(teams).length <= MAX_SLACK_TEAMS, `at most ${MAX_SLACK_TEAMS} teams`),
  })
  .strict();

/**
 * A tenant's settings as stored. `defaults` is a partial message body (model, tools, policy,
 * network, environment, mcpServers, agents, …) validated against the deployment's message schema
 * when it is set and again when a run starts.
 */
export const TenantSettingsSchema = z.object({
  /** Model ids or one-line model specs the tenant may use; `*` matches any run of characters. Absent: all the deployment allows. */
  models: z.array(z.string().min(1).max(512)).max(200).optional(),
  /** Base URLs one-line models may name, each within what the operator allows. Absent: all the operator allows. */
  modelHosts: z.array(z.string().min(1).max(512)).max(100).optional(),
  defaults: z.record(z.string(), z.unknown()).optional(),
  quotas: QuotasSchema.optional(),
  slack: SlackSettingsSchema.optional(),
});
export type TenantSettings = z.infer<typeof TenantSettingsSchema>;
