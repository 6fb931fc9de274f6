/**
 * Webhook activities (docs/integrations.md, "Webhooks"): publishing an event to the delivery
 * workflows of the endpoints that take it (`run-client/webhook-publisher.ts`, with the worker's
 * own Temporal client), one delivery attempt (`integrations/webhook-sender.ts`; a 2xx delivers,
 * 410 Gone disables the endpoint, a refusal of the egress policy fails for good, anything else is
 * retried by Temporal), and the record of a delivery whose retries ran out. Each attempt updates
 * the delivery's record: attempts, the last answer, the next attempt's time.
 */
import { ApplicationFailure, Context } from "@temporalio/activity";
import {
  type DeliverWebhookInput,
  subscribes,
  type WebhookActivities,
  type WebhookEvent,
  type WebhookRetry,
} from "../contracts/webhooks";
import {
  attemptRequestTimeoutMs,
  sendWebhook,
  type WebhookAttempt,
  webhookRetryOf,
} from "../integrations/webhook-sender";
import { publishWebhookEvent } from "../run-client/webhook-publisher";
import type { WebhookDelivery } from "../tenants/webhooks";
import type { ActivityDeps, WebhookDeps } from "./deps";

/** When Temporal runs attempt `attempt + 1` (its backoff: initial × 2^(attempt−1), at most the maximum). */
export function nextAttemptAt(now: number, attempt: number, retry: WebhookRetry): string {
  const wait = Math.min(retry.initialIntervalMs * 2 ** (attempt - 1), retry.maximumIntervalMs);
  return new Date(now + wait).toISOString();
}

/** The delivery's record after an attempt. */
export function attemptRecord(
  previous: WebhookDelivery | undefined,
  base: Pick<WebhookDelivery, "endpointId"> & { event: WebhookEvent },
  attempt: number,
  result: WebhookAttempt,
  next: string | undefined,
  now: number,
): WebhookDelivery {
  const at = new Date(now).toISOString();
  const delivered = result.kind === "answered" && result.status >= 200 && result.status < 300;
  return {
    eventId: base.event.id,
    eventType: base.event.type,
    sessionId: base.event.data.sessionId,
    endpointId: base.endpointId,
    createdAt: previous?.createdAt ?? at,
    status: delivered ? "delivered" : "pending",
    attempts: Math.max(attempt, (previous?.attempts ?? 0) + 1),
    updatedAt: at,
    lastAttemptAt: at,
    lastResponse:
      result.kind === "answered"
        ? { status: result.status, excerpt: result.excerpt.slice(0, 500) }
        : { error: result.error },
    ...(delivered || next === undefined ? {} : { nextAttemptAt: next }),
  };
}

function skippedBecause(endpoint: { disabled: boolean }): string {
  return endpoint.disabled
    ? "not sent: the endpoint is disabled"
    : "not sent: the endpoint no longer takes this event type";
}

export function webhookActivities(deps: Pick<ActivityDeps, "webhooks">): WebhookActivities {
  const webhooks = deps.webhooks;
  const need = (): WebhookDeps => {
    if (!webhooks)
      throw ApplicationFailure.nonRetryable(
        "this worker has no vault configured: webhooks need one",
        "WebhooksOff",
      );
    return webhooks;
  };

  return {
    async publishWebhookEvent({ tenantId, event }) {
      const { store, settings } = need();
      const context = Context.current();
      await publishWebhookEvent(
        { client: context.client, taskQueue: context.info.taskQueue, store, retry: webhookRetryOf(settings) },
        tenantId,
        event,
      );
    },

    async deliverWebhook(input: DeliverWebhookInput) {
      const { store, settings } = need();
      const { tenantId, endpointId, event } = input;
      const endpoint = await store.forDelivery(tenantId, endpointId);
      if (!endpoint || endpoint.disabled || !subscribes(endpoint.events, event.type)) {
        // A queued event of an endpoint since deleted, disabled (410) or unsubscribed: its record
        // (when the endpoint's records still exist) ends `failed`, not `pending` forever.
        const previous = endpoint && (await store.readDelivery(tenantId, endpointId, event));
        if (endpoint && previous?.status === "pending") {
          const { nextAttemptAt: _next, ...kept } = previous;
          await store.recordDelivery(tenantId, event, {
            ...kept,
            status: "failed",
            updatedAt: new Date().toISOString(),
            lastResponse: { ...kept.lastResponse, error: skippedBecause(endpoint) },
          });
        }
        return { outcome: "skipped" };
      }
      const attempt = Context.current().info.attempt;
      const result = await sendWebhook({
        url: endpoint.url,
        secrets: endpoint.secrets,
        event,
        settings: { ...settings, timeoutMs: attemptRequestTimeoutMs(settings.timeoutMs, input.retry) },
      });
      if (result.kind === "no-answer" && result.detail)
        Context.current().log.info("webhook delivery refused by the egress policy", {
          endpointId,
          detail: result.detail,
        });
      const now = Date.now();
      const previous = await store.readDelivery(tenantId, endpointId, event);
      const final = result.kind === "no-answer" ? result.refused : result.status === 410;
      const next = final ? undefined : nextAttemptAt(now, attempt, input.retry);
      const record = attemptRecord(previous, { endpointId, event }, attempt, result, next, now);
      await store.recordDelivery(tenantId, event, record);
      if (record.status === "delivered") return { outcome: "delivered" };
      if (result.kind === "answered" && result.status === 410) {
        await store.disable(tenantId, endpointId);
        throw ApplicationFailure.nonRetryable(
          "the endpoint answered 410 Gone: it is disabled",
          "WebhookGone",
        );
      }
      if (result.kind === "no-answer" && result.refused)
        throw ApplicationFailure.nonRetryable(result.error, "WebhookRefused");
      throw ApplicationFailure.retryable(
        result.kind === "answered" ? `the endpoint answered ${result.status}` : result.error,
        "WebhookNotDelivered",
      );
    },

    async recordWebhookFailure({ tenantId, endpointId, event, error }) {
      const { store } = need();
      const previous = await store.readDelivery(tenantId, endpointId, event);
      const at = new Date().toISOString();
      const { nextAttemptAt: _next, ...kept } = previous ?? {
        eventId: event.id,
        eventType: event.type,
        sessionId: event.data.sessionId,
        endpointId,
        attempts: 0,
        createdAt: at,
        status: "failed" as const,
        updatedAt: at,
      };
      await store.recordDelivery(tenantId, event, {
        ...kept,
        status: "failed",
        updatedAt: at,
        lastResponse: { ...kept.lastResponse, error: error.slice(0, 500) },
      });
    },
  };
}
