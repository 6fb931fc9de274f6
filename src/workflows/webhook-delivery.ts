/**
 * The delivery workflow of one webhook endpoint and one session (`keel-webhook/<tenant>/<endpoint>/<session>`,
 * docs/integrations.md, "Webhooks"): takes events by the `webhookEvent` signal (sent with
 * signal-with-start by the publishers) and delivers them one at a time, in the order signalled,
 * so a later event of a session never reaches the endpoint before an earlier one. Each delivery
 * is an activity retried by Temporal with exponential backoff until the retry settings' give-up
 * time; then it is recorded failed and the next event goes. An event id is taken once. Idle for
 * IDLE_CLOSE, the workflow ends (a later event starts it again); a long one continues as new.
 */
import {
  ActivityFailure,
  condition,
  continueAsNew,
  defineSignal,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from "@temporalio/workflow";
import {
  WEBHOOK_EVENT_SIGNAL,
  type WebhookActivities,
  type WebhookDeliveryInput,
  type WebhookEvent,
} from "../contracts/webhooks";
import { nextWebhookEvent, rememberEventId } from "./webhook-queue";

/** How long an idle delivery workflow waits for the next event before it ends. */
const IDLE_CLOSE = "1 minute";

const webhookEvent = defineSignal<[WebhookEvent]>(WEBHOOK_EVENT_SIGNAL);

const bookkeeping = proxyActivities<WebhookActivities>({
  startToCloseTimeout: "1 minute",
  retry: { initialInterval: "1 second", maximumInterval: "1 minute", maximumAttempts: 20 },
});

export async function webhookDelivery(input: WebhookDeliveryInput): Promise<void> {
  const queue: WebhookEvent[] = [...(input.queued ?? [])];
  let seen: string[] = [...(input.seen ?? [])];
  setHandler(webhookEvent, (event) => {
    const taken = rememberEventId(seen, event?.id);
    if (!taken) return;
    seen = taken;
    queue.push(event);
  });
  const { retry } = input;
  const delivering = proxyActivities<WebhookActivities>({
    // One request (KEEL_WEBHOOK_TIMEOUT_MS) and its record: a worker killed mid-attempt is
    // retried elsewhere once this has passed.
    startToCloseTimeout: retry.attemptTimeoutMs ?? "2 minutes",
    scheduleToCloseTimeout: retry.giveUpAfterMs,
    retry: {
      initialInterval: retry.initialIntervalMs,
      backoffCoefficient: 2,
      maximumInterval: retry.maximumIntervalMs,
    },
  });

  for (;;) {
    // A signal handled in the same activation as the idle timer is delivered, not dropped.
    if (!(await condition(() => queue.length > 0, IDLE_CLOSE)) && queue.length === 0) return;
    const event = nextWebhookEvent(queue);
    if (!event) continue;
    const attempt = { tenantId: input.tenantId, endpointId: input.endpointId, event, retry };
    try {
      await delivering.deliverWebhook(attempt);
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      const why = error.cause instanceof Error ? error.cause.message : error.message;
      // The record is bookkeeping: a store that stays down leaves it pending, and the next event goes.
      await bookkeeping
        .recordWebhookFailure({ ...attempt, error: why })
        .catch((failure: unknown) =>
          log.warn("recording a failed webhook delivery failed", { error: String(failure) }),
        );
    }
    if (workflowInfo().continueAsNewSuggested) {
      return continueAsNew<typeof webhookDelivery>({ ...input, queued: queue, seen });
    }
  }
}
