/**
 * Webhook events (docs/integrations.md, "Webhooks"): the event types a tenant subscribes its
 * endpoints to, their payloads, the delivery workflow's input and signal, and the pure mapping
 * from a run's own events to webhook events. Shared by the run workflow (which emits), the
 * activities and the API (which publish) and the delivery workflow (which delivers in order).
 *
 * Payloads carry tenant-safe fields only: ids, times, a status, a reason, an excerpt of the final
 * answer, a tool's name. Never a secret, a tool's arguments or a message's full text.
 */
import type { AgentEvent } from "../core/events";

export const WEBHOOK_EVENT_TYPES = [
  "run.started",
  "run.completed",
  "run.failed",
  "run.aborted",
  "run.paused",
  "run.resumed",
  "approval.required",
  "schedule.fired",
  "session.deleted",
] as const;

type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The sent-only event of `POST /v1/webhooks/{id}/test` (never subscribed, always accepted). */
export const WEBHOOK_TEST_EVENT = "webhook.test";

/** Longest excerpt of a run's final answer a `run.completed` payload carries. */
export const ANSWER_EXCERPT_CHARS = 1000;
/** Longest reason or message a payload carries. */
const REASON_CHARS = 500;

/** What a webhook event's `data` holds (fields absent when they do not apply). */
interface WebhookEventData {
  sessionId: string;
  /** The Temporal run id of the run (run.* and approval.required). */
  runId?: string;
  /** Why the run ended or paused. */
  reason?: string;
  /** The first ANSWER_EXCERPT_CHARS of the run's final answer (run.completed). */
  answerExcerpt?: string;
  /** The pause's kind: `runBudget` or `tenantBudget` (run.paused). */
  pauseType?: string;
  /** When a paused run ends unless resumed, ISO 8601 (run.paused). */
  pausedUntil?: string;
  /** approval.required */
  toolCallId?: string;
  toolName?: string;
  /** schedule.fired */
  scheduleId?: string;
}

/** One event as a receiver gets it (the JSON body of the POST). */
export interface WebhookEvent {
  /** Stable per event: the `webhook-id` header, the same on every attempt (deduplicate by it). */
  id: string;
  type: WebhookEventType | typeof WEBHOOK_TEST_EVENT;
  /** When the event happened, ISO 8601. */
  timestamp: string;
  data: WebhookEventData;
}

/** The retry settings of a delivery, fixed when its workflow starts (the worker's or API's settings). */
export interface WebhookRetry {
  initialIntervalMs: number;
  maximumIntervalMs: number;
  /** How long one event is retried before it is marked failed. */
  giveUpAfterMs: number;
  /**
   * How long one attempt may take before Temporal retries it elsewhere (the request's timeout and
   * the record's writes): what a worker killed mid-attempt costs. Absent in older inputs: 2 minutes.
   */
  attemptTimeoutMs?: number;
}

/** The input of `webhookDelivery`: one endpoint and one session, events in the order signalled. */
export interface WebhookDeliveryInput {
  tenantId: string;
  endpointId: string;
  sessionId: string;
  retry: WebhookRetry;
  /** Events carried across continue-as-new, not yet delivered. */
  queued?: WebhookEvent[];
  /** Ids already taken (a signal sent twice is delivered once). */
  seen?: string[];
}

/** The signal `webhookDelivery` takes events by. */
export const WEBHOOK_EVENT_SIGNAL = "webhookEvent";

/** The delivery workflow of (tenant, endpoint, session): one at a time, so order per session holds. */
export function webhookDeliveryWorkflowId(tenantId: string, endpointId: string, sessionId: string): string {
  return `keel-webhook/${tenantId}/${endpointId}/${sessionId}`;
}

interface PublishWebhookEventInput {
  tenantId: string;
  event: WebhookEvent;
}

export interface DeliverWebhookInput {
  tenantId: string;
  endpointId: string;
  event: WebhookEvent;
  retry: WebhookRetry;
}

interface DeliverWebhookResult {
  /** `delivered`, or `skipped` when the endpoint was deleted or is not subscribed any more. */
  outcome: "delivered" | "skipped";
}

export interface WebhookActivities {
  /** Hands the event to the delivery workflow of every endpoint subscribed to its type. */
  publishWebhookEvent(input: PublishWebhookEventInput): Promise<void>;
  /** One attempt to deliver; throws (retried by Temporal) unless the endpoint answered 2xx. */
  deliverWebhook(input: DeliverWebhookInput): Promise<DeliverWebhookResult>;
  /** Marks the delivery failed once its retries are exhausted. */
  recordWebhookFailure(input: DeliverWebhookInput & { error: string }): Promise<void>;
}

const cut = (text: string, chars: number) => (text.length > chars ? `${text.slice(0, chars)}…` : text);

/** What the run knows besides its event, for the payload. */
export interface RunEventContext {
  sessionId: string;
  runId: string;
  /** The run's last answer text (for run.completed). */
  lastAnswer?: string;
}

/**
 * The webhook event a run's own event becomes (without id and timestamp, which the workflow
 * assigns), or undefined when it is none. Pure.
 */
export function webhookEventOf(
  event: AgentEvent,
  context: RunEventContext,
): Pick<WebhookEvent, "type" | "data"> | undefined {
  const base = { sessionId: context.sessionId, runId: context.runId };
  switch (event.type) {
    case "agent_start":
      return { type: "run.started", data: base };
    case "agent_end": {
      const reason = cut(event.reason ?? event.status, REASON_CHARS);
      if (event.status === "completed")
        return {
          type: "run.completed",
          data: {
            ...base,
            reason,
            ...(context.lastAnswer ? { answerExcerpt: cut(context.lastAnswer, ANSWER_EXCERPT_CHARS) } : {}),
          },
        };
      if (event.status === "aborted") return { type: "run.aborted", data: { ...base, reason } };
      if (event.status === "failed") return { type: "run.failed", data: { ...base, reason } };
      return undefined;
    }
    case "run_paused":
      return {
        type: "run.paused",
        data: {
          ...base,
          reason: cut(event.message, REASON_CHARS),
          pauseType: event.reason.type,
          pausedUntil: new Date(event.until).toISOString(),
        },
      };
    case "run_resumed":
      return { type: "run.resumed", data: base };
    case "approval_requested":
      return {
        type: "approval.required",
        data: { ...base, toolCallId: event.toolCallId, toolName: event.toolName },
      };
    default:
      return undefined;
  }
}

/** Whether `types` (an endpoint's subscription) takes events of `type`; `*` takes all. */
export function subscribes(types: readonly string[], type: string): boolean {
  return type === WEBHOOK_TEST_EVENT || types.includes("*") || types.includes(type);
}
