/**
 * Usage per UTC day: `GET /v1/usage` for the caller's tenant, `GET /v1/admin/tenants/{id}/usage`
 * for the operator (docs/api.md, "Usage").
 */
import { createRoute } from "@hono/zod-openapi";
import { dayOf } from "../../tenants/usage";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import { TenantParamsSchema, UsageQuerySchema, UsageSchema } from "../schemas/tenants";
import { problemResponses } from "./common";

/** Longest range one read covers (one LIST or more per day). */
const MAX_USAGE_DAYS = 92;
const DEFAULT_USAGE_DAYS = 30;
const DAY_MS = 86_400_000;

const json = { content: { "application/json": { schema: UsageSchema } } };

const tenantUsage = createRoute({
  method: "get",
  path: "/v1/usage",
  summary: `The caller's usage per UTC day: runs started, model turns, tokens, cost, tool seconds (at most ${MAX_USAGE_DAYS} days)`,
  request: { query: UsageQuerySchema },
  responses: { 200: { description: "Usage", ...json }, ...problemResponses(422, 501) },
});

const adminUsage = createRoute({
  method: "get",
  path: "/v1/admin/tenants/{tenantId}/usage",
  summary: "A tenant's usage per UTC day (operator key: KEEL_ADMIN_KEY_SHA256)",
  security: [{ bearer: [] }],
  request: { params: TenantParamsSchema, query: UsageQuerySchema },
  responses: { 200: { description: "Usage", ...json }, ...problemResponses(422, 501) },
});

export function usageRoutes(deps: RouteContext) {
  const read = async (tenantId: string, query: { from?: string; to?: string }) => {
    if (!deps.tenants) throw new ProblemError("not-implemented", "This deployment keeps no tenant store.");
    // The schema admits real days only (400 otherwise, as the document says); a range the document
    // cannot state (from after to, too long) is 422.
    const to = query.to ?? dayOf(deps.now());
    const from = query.from ?? dayOf(Date.parse(`${to}T00:00:00Z`) - (DEFAULT_USAGE_DAYS - 1) * DAY_MS);
    const span = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1;
    if (!(span >= 1 && span <= MAX_USAGE_DAYS))
      throw new ProblemError(
        "invalid-range",
        `from must be a valid day on or before to, at most ${MAX_USAGE_DAYS} days before it.`,
        { errors: [{ path: "from", message: "out of range" }] },
      );
    return { tenantId, from, to, days: await deps.tenants.usage.days(tenantId, from, to) };
  };
  return createRouter()
    .openapi(tenantUsage, async (c) => c.json(await read(c.get("tenantId"), c.req.valid("query")), 200))
    .openapi(adminUsage, async (c) =>
      c.json(await read(c.req.valid("param").tenantId, c.req.valid("query")), 200),
    );
}
