/**
 * The API's webhook events (docs/integrations.md, "Webhooks"): `session.deleted` after a delete,
 * and `webhook.test` for `POST /v1/webhooks/{id}/test`, handed to the delivery workflows with the
 * API's Temporal client (`run-client/webhook-publisher.ts`, the publisher the workers use too).
 */
import { randomBytes } from "node:crypto";
import type { WebhookEvent } from "../contracts/webhooks";
import { DEFAULT_WEBHOOK_SETTINGS, webhookRetryOf } from "../integrations/webhook-sender";
import { publishWebhookEvent } from "../run-client/webhook-publisher";
import type { RouteContext } from "./route-context";

/** A new event id (API events happen once: a retried request is a new event). */
export const newEventId = (): string => `evt_${randomBytes(16).toString("hex")}`;

/** Publishes `event` (only to `endpointId` when given); answers the endpoints it went to. */
export async function publishFromApi(
  deps: RouteContext,
  tenantId: string,
  event: WebhookEvent,
  endpointId?: string,
): Promise<string[]> {
  if (!deps.webhooks) return [];
  const settings = deps.config.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;
  const runs = await deps.runs();
  return publishWebhookEvent(
    {
      client: runs.client,
      taskQueue: runs.taskQueue,
      store: deps.webhooks,
      retry: webhookRetryOf(settings),
    },
    tenantId,
    event,
    endpointId,
  );
}
