/**
 * Publishing a webhook event (docs/integrations.md, "Webhooks"): for each of the tenant's enabled
 * endpoints subscribed to its type, a pending delivery record, then the event sent by
 * signal-with-start to the delivery workflow of (tenant, endpoint, session), which delivers its
 * session's events one after another in the order they were signalled. Used by the worker's
 * `publishWebhookEvent` activity (run events, schedule firings) and by the API (session deletes,
 * test events). A retried publish signals the same event again; the workflow takes an id once;
 * the record is created once (an existing one is kept), and one whose signal failed is `failed`.
 */
import type { Client } from "@temporalio/client";
import {
  subscribes,
  WEBHOOK_EVENT_SIGNAL,
  type WebhookEvent,
  type WebhookRetry,
  webhookDeliveryWorkflowId,
} from "../contracts/webhooks";
import type { WebhookDelivery, WebhookStore } from "../tenants/webhooks";
import { WorkflowType } from "../workflows/references";
import { tenantPriority } from "./fairness";

export interface WebhookPublisher {
  client: Client;
  /** The shared task queue the delivery workflows run on. */
  taskQueue: string;
  store: WebhookStore;
  retry: WebhookRetry;
}

/**
 * Hands `event` to the endpoints that take it (only `endpointId`'s when given: a test event).
 * Answers the ids of the endpoints it went to.
 */
export async function publishWebhookEvent(
  publisher: WebhookPublisher,
  tenantId: string,
  event: WebhookEvent,
  endpointId?: string,
): Promise<string[]> {
  const { client, store, taskQueue, retry } = publisher;
  const endpoints = (await store.list(tenantId)).filter(
    (endpoint) =>
      !endpoint.disabledAt &&
      (endpointId === undefined ? subscribes(endpoint.events, event.type) : endpoint.id === endpointId),
  );
  const at = new Date().toISOString();
  for (const endpoint of endpoints) {
    const record: WebhookDelivery = {
      eventId: event.id,
      eventType: event.type,
      sessionId: event.data.sessionId,
      endpointId: endpoint.id,
      status: "pending",
      attempts: 0,
      createdAt: at,
      updatedAt: at,
    };
    await store.createDelivery(tenantId, event, record);
    try {
      await client.workflow.signalWithStart(WorkflowType.webhookDelivery, {
        workflowId: webhookDeliveryWorkflowId(tenantId, endpoint.id, event.data.sessionId),
        taskQueue,
        args: [{ tenantId, endpointId: endpoint.id, sessionId: event.data.sessionId, retry }],
        signal: WEBHOOK_EVENT_SIGNAL,
        signalArgs: [event],
        priority: tenantPriority(tenantId),
      });
    } catch (error) {
      // Not `pending` with no workflow behind it: `failed`, until a retried publish gets the
      // event to its workflow, whose first attempt rewrites the record. A record an attempt
      // already wrote (an earlier signal of this event went through) is left as it is.
      const current = await store.readDelivery(tenantId, endpoint.id, event).catch(() => undefined);
      if (current?.status === "pending" && current.attempts === 0) {
        await store
          .recordDelivery(tenantId, event, {
            ...current,
            status: "failed",
            updatedAt: new Date().toISOString(),
            lastResponse: { error: `not handed to its delivery workflow: ${String(error).slice(0, 400)}` },
          })
          .catch(() => {});
      }
      throw error;
    }
  }
  return endpoints.map((endpoint) => endpoint.id);
}
