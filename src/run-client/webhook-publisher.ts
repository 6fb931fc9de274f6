/**
 * Publishing a webhook event (docs/integrations.md, "Webhooks"): for each of the tenant's enabled
 * endpoints subscribed to its type, a pending delivery record, then the event sent by
 * signal-with-start to the delivery workflow of (tenant, endpoint, session), which delivers its
 * session's events one after another in the order they were signalled. Used by the worker's
 * `publishWebhookEvent` activity (run events, schedule firings) and by the API (session deletes,
 * test events). A retried publish signals the same event again; the workflow takes an id once.
 */
import type { Client } from "@temporalio/client";
import {
  subscribes,
  WEBHOOK_EVENT_SIGNAL,
  type WebhookEvent,
  type WebhookRetry,
  webhookDeliveryWorkflowId,
} from "../contracts/webhooks";
import type { WebhookStore } from "../tenants/webhooks";
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
    await store.createDelivery(tenantId, event, {
      eventId: event.id,
      eventType: event.type,
      sessionId: event.data.sessionId,
      endpointId: endpoint.id,
      status: "pending",
      attempts: 0,
      createdAt: at,
      updatedAt: at,
    });
    await client.workflow.signalWithStart(WorkflowType.webhookDelivery, {
      workflowId: webhookDeliveryWorkflowId(tenantId, endpoint.id, event.data.sessionId),
      taskQueue,
      args: [{ tenantId, endpointId: endpoint.id, sessionId: event.data.sessionId, retry }],
      signal: WEBHOOK_EVENT_SIGNAL,
      signalArgs: [event],
      priority: tenantPriority(tenantId),
    });
  }
  return endpoints.map((endpoint) => endpoint.id);
}
