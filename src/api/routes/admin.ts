/**
 * The admin API (docs/api.md, "Tenant administration"): tenants, their API keys and settings,
 * for the operator's key only (admin-auth.ts). Mounted when the app has a tenant store.
 */
import { createRoute, type z } from "@hono/zod-openapi";
import { ModelUrlPolicy } from "../../providers/model-urls";
import { hostsBeyondOperator } from "../../tenants/settings";
import { putSettingsClaimingTeams, SlackTeamTakenError } from "../../tenants/slack-teams";
import type { TenantStore } from "../../tenants/store";
import type { ApiKeyRecord } from "../../tenants/types";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import {
  ApiKeyListSchema,
  ApiKeyViewSchema,
  CreatedKeySchema,
  CreateKeyBodySchema,
  CreateTenantBodySchema,
  KeyParamsSchema,
  TenantListSchema,
  TenantParamsSchema,
  TenantViewSchema,
  tenantSettingsSchema,
} from "../schemas/tenants";
import { problemResponses } from "./common";
import { messageBodyOptions, refuseFullNetwork } from "./runs";

const json = <T extends z.ZodType>(schema: T) => ({ content: { "application/json": { schema } } });
const body = <T extends z.ZodType>(schema: T) => ({ required: true, ...json(schema) });
const ADMIN = "/v1/admin/tenants";
const security = [{ bearer: [] }];
const summaryOf = (text: string) => `${text} (operator key: KEEL_ADMIN_KEY_SHA256)`;

const createTenant = createRoute({
  method: "post",
  path: ADMIN,
  summary: summaryOf("Create a tenant"),
  security,
  request: { body: body(CreateTenantBodySchema) },
  responses: {
    201: { description: "Created", ...json(TenantViewSchema) },
    ...problemResponses(501, 409, 413, 415),
  },
});

const listTenants = createRoute({
  method: "get",
  path: ADMIN,
  summary: summaryOf("List the tenants made through the admin API"),
  security,
  responses: { 200: { description: "Tenants", ...json(TenantListSchema) }, ...problemResponses(501) },
});

const getTenant = createRoute({
  method: "get",
  path: `${ADMIN}/{tenantId}`,
  summary: summaryOf("Read a tenant"),
  security,
  request: { params: TenantParamsSchema },
  responses: { 200: { description: "The tenant", ...json(TenantViewSchema) }, ...problemResponses(501) },
});

const createKey = createRoute({
  method: "post",
  path: `${ADMIN}/{tenantId}/keys`,
  summary: summaryOf("Issue an API key for the tenant: the key is in this answer only"),
  security,
  request: {
    params: TenantParamsSchema,
    body: { required: false, content: { "application/json": { schema: CreateKeyBodySchema } } },
  },
  responses: {
    201: { description: "Issued", ...json(CreatedKeySchema) },
    ...problemResponses(501, 413, 415),
  },
});

const listKeys = createRoute({
  method: "get",
  path: `${ADMIN}/{tenantId}/keys`,
  summary: summaryOf("List the tenant's API keys (never the keys themselves)"),
  security,
  request: { params: TenantParamsSchema },
  responses: { 200: { description: "Keys", ...json(ApiKeyListSchema) }, ...problemResponses(501) },
});

const revokeKey = createRoute({
  method: "delete",
  path: `${ADMIN}/{tenantId}/keys/{keyId}`,
  summary: summaryOf(
    "Revoke an API key: refused on every API instance within 5 s (open event streams end too)",
  ),
  security,
  request: { params: KeyParamsSchema },
  responses: { 200: { description: "Revoked", ...json(ApiKeyViewSchema) }, ...problemResponses(501) },
});

export function adminRoutes(deps: RouteContext) {
  const options = messageBodyOptions(deps);
  const settingsSchema = tenantSettingsSchema(options);
  const modelUrls = options.modelUrls ?? new ModelUrlPolicy({ allowlist: [], configured: {} });
  const getSettings = createRoute({
    method: "get",
    path: `${ADMIN}/{tenantId}/settings`,
    summary: summaryOf("Read the tenant's settings"),
    security,
    request: { params: TenantParamsSchema },
    responses: { 200: { description: "Settings", ...json(settingsSchema) }, ...problemResponses(501) },
  });
  const putSettings = createRoute({
    method: "put",
    path: `${ADMIN}/{tenantId}/settings`,
    summary: summaryOf(
      "Replace the tenant's settings: allowed models and one-line model hosts, default run settings, quotas, Slack teams",
    ),
    security,
    request: { params: TenantParamsSchema, body: body(settingsSchema) },
    responses: {
      200: { description: "Stored", ...json(settingsSchema) },
      ...problemResponses(501, 409, 413, 415),
    },
  });

  const served = (): TenantStore => {
    if (!deps.tenants) throw new ProblemError("not-implemented", "This deployment keeps no tenant store.");
    return deps.tenants.store;
  };
  const requireTenant = async (tenantId: string) => {
    const tenant = await served().getTenant(tenantId);
    if (!tenant) throw new ProblemError("tenant-not-found", `No tenant ${JSON.stringify(tenantId)}.`);
    return tenant;
  };

  return createRouter()
    .openapi(createTenant, async (c) => {
      const { id, name } = c.req.valid("json");
      const tenant = await served().createTenant(id, name);
      if (!tenant) throw new ProblemError("tenant-exists", `A tenant ${JSON.stringify(id)} exists.`);
      return c.json(tenant, 201);
    })
    .openapi(listTenants, async (c) => c.json({ tenants: await served().listTenants() }, 200))
    .openapi(getTenant, async (c) => c.json(await requireTenant(c.req.valid("param").tenantId), 200))
    .openapi(createKey, async (c) => {
      const { tenantId } = c.req.valid("param");
      await requireTenant(tenantId);
      const { label } = c.req.valid("json") ?? {};
      const { key, record } = await served().createKey(tenantId, label);
      return c.json({ ...keyView(record), key }, 201);
    })
    .openapi(listKeys, async (c) => {
      const { tenantId } = c.req.valid("param");
      await requireTenant(tenantId);
      return c.json({ keys: (await served().listKeys(tenantId)).map(keyView) }, 200);
    })
    .openapi(revokeKey, async (c) => {
      const { tenantId, keyId } = c.req.valid("param");
      const record = await served().revokeKey(tenantId, keyId);
      if (!record) throw new ProblemError("key-not-found", `Tenant ${tenantId} has no key ${keyId}.`);
      return c.json(keyView(record), 200);
    })
    .openapi(getSettings, async (c) => {
      const { tenantId } = c.req.valid("param");
      await requireTenant(tenantId);
      // As stored: defaults the deployment no longer allows are shown (a run refuses them, 400).
      return c.json((await served().getSettings(tenantId)) as z.infer<typeof settingsSchema>, 200);
    })
    .openapi(putSettings, async (c) => {
      const { tenantId } = c.req.valid("param");
      await requireTenant(tenantId);
      const settings = c.req.valid("json");
      const beyond = hostsBeyondOperator(settings.modelHosts ?? [], modelUrls);
      if (beyond.length > 0)
        throw new ProblemError(
          "invalid-request",
          `modelHosts may only narrow what the operator allows one-line models to name; not allowed: ${beyond.join(", ")}`,
          { errors: [{ path: "modelHosts", message: "beyond what the operator allows" }] },
        );
      refuseFullNetwork(deps, tenantId, settings.defaults?.network, "tenant's default run settings");
      // The defaults as sent (validated above): a run parses them again against the rules then.
      const sent = (await c.req.json()) as { defaults?: Record<string, unknown> };
      const stored = { ...settings, ...(sent.defaults ? { defaults: sent.defaults } : {}) };
      try {
        // The operator's mapping wins over every tenant's: a team it names is not a tenant's to take.
        const operatorTeams = deps.config.slack?.teams ?? {};
        const operators = Object.keys(stored.slack?.teams ?? {}).filter((team) =>
          Object.hasOwn(operatorTeams, team),
        );
        if (operators.length > 0) throw new SlackTeamTakenError(operators.map((teamId) => ({ teamId })));
        await putSettingsClaimingTeams(served(), tenantId, stored);
      } catch (error) {
        if (!(error instanceof SlackTeamTakenError)) throw error;
        throw new ProblemError("slack-team-taken", error.message, {
          teams: error.conflicts.map((conflict) => conflict.teamId),
        });
      }
      return c.json(settings, 200);
    });
}

function keyView(record: ApiKeyRecord) {
  return {
    id: record.id,
    ...(record.label !== undefined ? { label: record.label } : {}),
    createdAt: record.createdAt,
    ...(record.revokedAt !== undefined ? { revokedAt: record.revokedAt } : {}),
  };
}
