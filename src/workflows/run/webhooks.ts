/**
 * The run's webhook events (docs/integrations.md, "Webhooks"): each run event that is a webhook
 * event (`contracts/webhooks.ts` `webhookEventOf`) of a type the tenant's endpoints take is handed
 * to the `publishWebhookEvent` activity, one after another in the order emitted (so the delivery
 * workflows get them in order), not cancellable, and awaited before the run closes. A run whose
 * tenant has no endpoint (its openSession said so) does nothing here: no activity, no marker.
 * The event id is `evt_<execution's run id>_<event seq>`: the same on a replay, unique per session
 * (a run handed over by continue-as-new numbers its events from 1 again, in an execution of its own).
 */
import { CancellationScope, log, proxyActivities, workflowInfo } from "@temporalio/workflow";
import { subscribes, type WebhookActivities, webhookEventOf } from "../../contracts/webhooks";
import type { AgentEvent } from "../../core/events";
import { PATCHES, takesPatch } from "../patches";
import type { RunContext } from "./context";

// Retried without an attempt cap until the default give-up time (KEEL_WEBHOOK_GIVE_UP_HOURS): an
// S3 or Temporal outage delays the run's close (it awaits its publishes), it does not lose events.
// Activity options are not part of the replay check: histories scheduled with the former options replay.
const publishing = proxyActivities<WebhookActivities>({
  startToCloseTimeout: "1 minute",
  scheduleToCloseTimeout: "72 hours",
  retry: { initialInterval: "1 second", maximumInterval: "5 minutes" },
});

/** The function the run's emitted events go through for webhooks. */
export function webhookPublisher(ctx: RunContext): (event: AgentEvent) => void {
  let patchTaken: boolean | undefined;
  return (event) => {
    const { run } = ctx;
    const types = run.webhookEvents;
    if (!types || types.length === 0) return;
    const info = workflowInfo();
    const body = webhookEventOf(event, {
      sessionId: run.ref.sessionId,
      runId: info.runId,
      lastAnswer: run.lastAssistantText,
    });
    if (!body || !subscribes(types, body.type)) return;
    patchTaken ??= takesPatch(PATCHES.webhookEvents, ctx.runVersion);
    if (!patchTaken) return;
    const webhookEvent = {
      ...body,
      id: `evt_${info.runId.replace(/-/g, "")}_${event.seq}`,
      timestamp: new Date(Date.now()).toISOString(),
    };
    const previous = ctx.webhooksPublished ?? Promise.resolve();
    ctx.webhooksPublished = previous
      .then(() =>
        CancellationScope.nonCancellable(() =>
          publishing.publishWebhookEvent({ tenantId: run.ref.tenantId, event: webhookEvent }),
        ),
      )
      .catch((error: unknown) => {
        // Only after the give-up time (or a worker without webhooks): the run's outcome stands.
        log.warn("publishing a webhook event failed", { type: webhookEvent.type, error: String(error) });
      });
  };
}
