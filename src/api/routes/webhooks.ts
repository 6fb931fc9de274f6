/**
 * Webhook endpoints (docs/api.md, "Webhooks"; docs/integrations.md, "Webhooks"):
 * `POST /v1/webhooks` subscribes a URL to event types and answers its signing secret once,
 * `GET /v1/webhooks` and `GET /v1/webhooks/{id}` answer endpoints (never a secret),
 * `DELETE /v1/webhooks/{id}`, `POST /v1/webhooks/{id}/test` sends a `webhook.test` event,
 * `POST /v1/webhooks/{id}/rotate` answers a new secret (the old one signs too until the overlap
 * ends), `GET /v1/webhooks/{id}/deliveries` answers the latest deliveries. Every id is looked up
 * under the caller's own tenant: another tenant's endpoint is 404. A URL goes through the egress
 * policy when added (and again at each delivery); secrets are sealed by the tenant vault, so
 * without a vault these routes answer 503.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { WEBHOOK_EVENT_TYPES, WEBHOOK_TEST_EVENT } from "../../contracts/webhooks";
import {
  DEFAULT_WEBHOOK_SETTINGS,
  MAX_WEBHOOK_URL_CHARS,
  WEBHOOK_HOSTS_SETTING,
  webhookUrlRefusal,
} from "../../integrations/webhook-sender";
import {
  DELIVERY_STATUSES,
  TooManyEndpointsError,
  WEBHOOK_ENDPOINT_ID,
  type WebhookStore,
} from "../../tenants/webhooks";
import { VAULT_SETTING_NAMES } from "../../vault/settings";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import { newEventId, publishFromApi } from "../webhook-publishing";
import { problemResponses } from "./common";

/** Longest overlap a rotation may ask for: a week. */
const MAX_OVERLAP_SECONDS = 7 * 86_400;

const json = <T extends z.ZodType>(schema: T) => ({ content: { "application/json": { schema } } });

const EventTypeSchema = z
  .enum([...WEBHOOK_EVENT_TYPES, "*"] as [string, ...string[]])
  .openapi("WebhookEventType", {
    description: "An event type an endpoint takes; `*` takes every type (new ones included)",
  });

const IdParamsSchema = z.object({
  id: z
    .string()
    .regex(WEBHOOK_ENDPOINT_ID, "a webhook endpoint id: wh_ and 24 hex digits")
    .openapi({ param: { name: "id", in: "path" }, example: "wh_0123456789abcdef01234567" }),
});

const CreateWebhookBodySchema = z
  .object({
    url: z
      .string()
      .min(1)
      .max(MAX_WEBHOOK_URL_CHARS)
      .openapi({
        description: `Where events are POSTed: https:// (http:// only for hosts the operator lists in ${WEBHOOK_HOSTS_SETTING}); its host may not resolve to a loopback, private, link-local or metadata address unless the operator lists it`,
        example: "https://hooks.example.com/keel",
      }),
    events: z
      .array(EventTypeSchema)
      .min(1)
      .max(WEBHOOK_EVENT_TYPES.length + 1),
    description: z.string().max(200).optional(),
  })
  .strict()
  .openapi("CreateWebhookRequest");

const WebhookEndpointSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string().optional(),
    createdAt: z.string(),
    updatedAt: z.string(),
    disabledAt: z.string().optional().openapi({ description: "Set when the endpoint answered 410 Gone" }),
    previousSecretExpiresAt: z
      .string()
      .optional()
      .openapi({ description: "Until when the secret before the last rotation still signs" }),
  })
  .openapi("WebhookEndpoint", { description: "A webhook endpoint; never its signing secret" });

const SecretField = z.string().openapi({
  description:
    "The signing secret (whsec_ and base64), answered only here: verify deliveries with a Standard Webhooks library",
  example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
});

// A schema of its own, not an extension: the document states one object, not an allOf.
const CreatedWebhookSchema = z
  .object({ ...WebhookEndpointSchema.shape, secret: SecretField })
  .openapi("CreatedWebhook");

const RotateBodySchema = z
  .object({
    overlapSeconds: z.number().int().min(0).max(MAX_OVERLAP_SECONDS).optional().openapi({
      description:
        "How long the current secret keeps signing beside the new one (default KEEL_WEBHOOK_ROTATION_OVERLAP_SECONDS, one day); 0 ends it now",
    }),
  })
  .strict()
  .openapi("RotateWebhookSecretRequest");

const RotatedSchema = z
  .object({ secret: SecretField, endpoint: WebhookEndpointSchema })
  .openapi("RotatedWebhookSecret");

const WebhookEventSchema = z
  .object({
    id: z
      .string()
      .openapi({ description: "Also the webhook-id header; the same on every attempt: deduplicate by it" }),
    type: z.enum([...WEBHOOK_EVENT_TYPES, WEBHOOK_TEST_EVENT] as [string, ...string[]]),
    timestamp: z.string().openapi({ description: "When it happened, ISO 8601" }),
    data: z.object({
      sessionId: z.string(),
      runId: z.string().optional().openapi({ description: "run.* and approval.required" }),
      reason: z
        .string()
        .optional()
        .openapi({ description: "Why the run ended or paused (at most 500 characters)" }),
      answerExcerpt: z
        .string()
        .optional()
        .openapi({ description: "run.completed: the first 1,000 characters of the final answer" }),
      pauseType: z.string().optional().openapi({ description: "run.paused: runBudget or tenantBudget" }),
      pausedUntil: z.string().optional().openapi({ description: "run.paused: when it ends unless resumed" }),
      toolCallId: z.string().optional().openapi({ description: "approval.required" }),
      toolName: z.string().optional().openapi({ description: "approval.required" }),
      scheduleId: z.string().optional().openapi({ description: "schedule.fired" }),
    }),
  })
  .openapi("WebhookEvent", {
    description:
      "The body of every delivery (POST, application/json), signed per Standard Webhooks: headers webhook-id, webhook-timestamp, webhook-signature",
  });

const TestSentSchema = z
  .object({ event: WebhookEventSchema })
  .openapi("WebhookTestSent", { description: "The test event, handed to the endpoint's delivery" });

const DeliverySchema = z
  .object({
    eventId: z.string(),
    eventType: z.string(),
    sessionId: z.string(),
    endpointId: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
    lastAttemptAt: z.string().optional(),
    lastResponse: z
      .object({
        status: z.number().int().optional(),
        excerpt: z.string().optional().openapi({ description: "The answer's first 500 characters" }),
        error: z
          .string()
          .optional()
          .openapi({ description: "Why no answer came, or why the delivery failed" }),
      })
      .optional(),
    nextAttemptAt: z.string().optional(),
  })
  .openapi("WebhookDelivery");

const DeliveryListSchema = z.object({ deliveries: z.array(DeliverySchema) }).openapi("WebhookDeliveryList");

const PROBLEMS = problemResponses(400, 404, 429, 503);

const createWebhook = createRoute({
  method: "post",
  path: "/v1/webhooks",
  summary: "Subscribes an endpoint to event types; answers its signing secret (only here)",
  request: { body: { required: true, ...json(CreateWebhookBodySchema) } },
  responses: {
    201: { description: "Created", ...json(CreatedWebhookSchema) },
    ...problemResponses(400, 422, 429, 503),
  },
});

const listWebhooks = createRoute({
  method: "get",
  path: "/v1/webhooks",
  summary: "The caller's webhook endpoints (never their secrets)",
  responses: {
    200: {
      description: "Endpoints",
      ...json(z.object({ webhooks: z.array(WebhookEndpointSchema) }).openapi("WebhookList")),
    },
    ...PROBLEMS,
  },
});

const getWebhook = createRoute({
  method: "get",
  path: "/v1/webhooks/{id}",
  summary: "One of the caller's webhook endpoints",
  request: { params: IdParamsSchema },
  responses: { 200: { description: "Endpoint", ...json(WebhookEndpointSchema) }, ...PROBLEMS },
});

const deleteWebhook = createRoute({
  method: "delete",
  path: "/v1/webhooks/{id}",
  summary: "Deletes the endpoint: deliveries not yet made to it are dropped",
  request: { params: IdParamsSchema },
  responses: { 204: { description: "Deleted" }, ...PROBLEMS },
});

const testWebhook = createRoute({
  method: "post",
  path: "/v1/webhooks/{id}/test",
  summary: "Sends a webhook.test event to the endpoint (its delivery shows in deliveries)",
  request: { params: IdParamsSchema },
  responses: {
    202: { description: "Handed to the endpoint's delivery", ...json(TestSentSchema) },
    ...PROBLEMS,
  },
});

const rotateWebhook = createRoute({
  method: "post",
  path: "/v1/webhooks/{id}/rotate",
  summary: "A new signing secret (answered only here); the current one keeps signing until the overlap ends",
  request: { params: IdParamsSchema, body: { required: false, ...json(RotateBodySchema) } },
  responses: { 200: { description: "Rotated", ...json(RotatedSchema) }, ...PROBLEMS },
});

const listDeliveries = createRoute({
  method: "get",
  path: "/v1/webhooks/{id}/deliveries",
  summary: "The endpoint's latest deliveries, newest first: status, attempts, last response, next attempt",
  request: { params: IdParamsSchema },
  responses: { 200: { description: "Deliveries", ...json(DeliveryListSchema) }, ...PROBLEMS },
});

function storeOf(deps: RouteContext): WebhookStore {
  if (!deps.webhooks)
    throw new ProblemError(
      "vault-not-configured",
      `Webhook signing secrets are kept in the tenant vault: set ${VAULT_SETTING_NAMES.join(" or ")} on the API and the workers (docs/deploy.md).`,
    );
  return deps.webhooks;
}

const notFound = (id: string) =>
  new ProblemError("webhook-not-found", `This tenant has no webhook endpoint ${id}.`);

export function webhookRoutes(deps: RouteContext) {
  const settings = () => deps.config.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;
  return createRouter()
    .openapi(createWebhook, async (c) => {
      const store = storeOf(deps);
      const body = c.req.valid("json");
      const refusal = await webhookUrlRefusal(body.url, settings().hosts, (detail) =>
        deps.log({ level: "info", msg: "webhook endpoint URL refused", path: c.req.path, detail }),
      );
      if (refusal)
        throw new ProblemError("webhook-url-refused", `url: ${refusal}.`, {
          errors: [{ path: "url", message: refusal }],
        });
      try {
        const { endpoint, secret } = await store.create(c.get("tenantId"), {
          url: body.url,
          events: body.events,
          ...(body.description ? { description: body.description } : {}),
        });
        return c.json({ ...endpoint, secret }, 201);
      } catch (error) {
        if (error instanceof TooManyEndpointsError) throw new ProblemError("quota-exceeded", error.message);
        throw error;
      }
    })
    .openapi(listWebhooks, async (c) => {
      const store = storeOf(deps);
      return c.json({ webhooks: await store.list(c.get("tenantId")) }, 200);
    })
    .openapi(getWebhook, async (c) => {
      const { id } = c.req.valid("param");
      const endpoint = await storeOf(deps).get(c.get("tenantId"), id);
      if (!endpoint) throw notFound(id);
      return c.json(endpoint, 200);
    })
    .openapi(deleteWebhook, async (c) => {
      const { id } = c.req.valid("param");
      if (!(await storeOf(deps).delete(c.get("tenantId"), id))) throw notFound(id);
      return c.body(null, 204);
    })
    .openapi(testWebhook, async (c) => {
      const { id } = c.req.valid("param");
      const tenantId = c.get("tenantId");
      if (!(await storeOf(deps).get(tenantId, id))) throw notFound(id);
      const event = {
        id: newEventId(),
        type: WEBHOOK_TEST_EVENT,
        timestamp: new Date(deps.now()).toISOString(),
        data: { sessionId: "webhook-test" },
      } as const;
      await publishFromApi(deps, tenantId, event, id);
      return c.json({ event }, 202);
    })
    .openapi(rotateWebhook, async (c) => {
      const { id } = c.req.valid("param");
      const overlapSeconds = c.req.valid("json")?.overlapSeconds;
      const overlapMs = overlapSeconds === undefined ? settings().rotationOverlapMs : overlapSeconds * 1000;
      const rotated = await storeOf(deps).rotate(c.get("tenantId"), id, overlapMs);
      if (!rotated) throw notFound(id);
      return c.json(rotated, 200);
    })
    .openapi(listDeliveries, async (c) => {
      const { id } = c.req.valid("param");
      const store = storeOf(deps);
      const tenantId = c.get("tenantId");
      if (!(await store.get(tenantId, id))) throw notFound(id);
      return c.json({ deliveries: await store.deliveries(tenantId, id) }, 200);
    });
}
