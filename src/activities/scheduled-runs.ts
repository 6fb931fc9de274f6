/**
 * Activities of a schedule's firing (`scheduledRun`): start the run through the one start path
 * (`startOrDeliver`, so a firing is admitted under the tenant's quotas, holds its slot, is counted
 * and is refused exactly as `POST …/messages` is), wait for that run to end, and abort it when
 * the schedule's overlap policy cancels the firing. They use the worker's own Temporal client.
 * Over a quota the firing fails, saying which, and nothing starts.
 */
import { ApplicationFailure, Context } from "@temporalio/activity";
import { WorkflowFailedError } from "@temporalio/client";
import type {
  ScheduledRunActivities,
  StartScheduledRunInput,
  StartScheduledRunResult,
} from "../contracts/activities";
import { type RunResult, runWorkflowId } from "../contracts/runs";
import { subscribes } from "../contracts/webhooks";
import { DeliveryRefusal, FailureType } from "../core/failure-types";
import type { SessionRef } from "../core/session-ref";
import { webhookRetryOf } from "../integrations/webhook-sender";
import { RunClient } from "../run-client/run-client";
import { deliveryOf, type MessageOutcome, startOrDeliver } from "../run-client/start-or-deliver";
import { publishWebhookEvent } from "../run-client/webhook-publisher";
import { sha256Hex } from "../store/digest";
import { quotaGate } from "../tenants/run-quotas";
import type { ActivityDeps, WebhookDeps } from "./deps";

/** How often the wait heartbeats (cancellation reaches it with a heartbeat). */
const HEARTBEAT_EVERY_MS = 2_000;

function runClient(): RunClient {
  const context = Context.current();
  return new RunClient(context.client, context.info.taskQueue);
}

const ref = (input: SessionRef): SessionRef => ({ tenantId: input.tenantId, sessionId: input.sessionId });

/**
 * A firing's start as the activity's result, or its failure: over a quota the firing fails for
 * good, saying which; a run's refusal fails it with the refusal's type, retried as the API's
 * 409 and 429 invite a client to retry, except an invalid message, which would fail again.
 */
export function firingStartOf(outcome: MessageOutcome): StartScheduledRunResult {
  switch (outcome.type) {
    case "quota-exceeded":
      throw ApplicationFailure.nonRetryable(
        `the firing started no run: ${outcome.message}`,
        FailureType.quotaExceeded,
      );
    case "refused":
      throw ApplicationFailure.create({
        message: `the firing's prompt was not delivered: ${outcome.message}`,
        type: outcome.refusal,
        nonRetryable: outcome.refusal === DeliveryRefusal.invalid,
      });
    default:
      return { runId: outcome.runId, delivery: deliveryOf(outcome) };
  }
}

/**
 * The firing's `schedule.fired` webhook event, when the tenant's endpoints take it: published
 * before the run starts (so it reaches them before the run's own events), with an id and a time
 * a retried activity repeats.
 */
async function publishFiring(
  webhooks: WebhookDeps | undefined,
  input: StartScheduledRunInput,
): Promise<void> {
  if (!webhooks || input.scheduleId === undefined) return;
  if (!subscribes(await webhooks.store.subscribedTypes(input.tenantId), "schedule.fired")) return;
  const context = Context.current();
  await publishWebhookEvent(
    {
      client: context.client,
      taskQueue: context.info.taskQueue,
      store: webhooks.store,
      retry: webhookRetryOf(webhooks.settings),
    },
    input.tenantId,
    {
      id: `evt_${sha256Hex(input.deliveryId).slice(0, 32)}`,
      type: "schedule.fired",
      timestamp: new Date(context.info.scheduledTimestampMs).toISOString(),
      data: { sessionId: input.sessionId, scheduleId: input.scheduleId },
    },
  );
}

/**
 * The worker's door to the one start path: a message started (or delivered) with `startOrDeliver`
 * under the tenant's quotas, counted in its usage, exactly as `POST …/messages` would. Used by a
 * schedule's firings and an eval's trials.
 */
export function workerRunStarter(deps: Pick<ActivityDeps, "tenants" | "usage">) {
  const { tenants, usage } = deps;
  // One gate per worker; a slot's holder is looked up with the calling activity's own client.
  const admission = tenants && usage && { tenants, gate: quotaGate(tenants, usage, async () => runClient()) };
  return async (input: StartScheduledRunInput): Promise<MessageOutcome> =>
    startOrDeliver(
      {
        runs: runClient(),
        ...(admission ? { quotas: admission.gate } : {}),
        ...(usage ? { usage } : {}),
        warn: (msg, fields) => Context.current().log.warn(msg, fields),
        now: Date.now,
      },
      {
        ref: ref(input),
        // A follow-up: a run already live in a named session reads the prompt when it would stop.
        request: { text: input.text, mode: "followUp" },
        settings: input.settings,
        quotas: admission && (await admission.tenants.getSettings(input.tenantId)).quotas,
        deliveryId: input.deliveryId,
      },
    );
}

export function scheduledRunActivities(
  deps: Pick<ActivityDeps, "tenants" | "usage" | "webhooks"> = {},
): ScheduledRunActivities {
  const start = workerRunStarter(deps);
  return {
    async startScheduledRun(input) {
      // `schedule.fired` is best effort (docs/integrations.md): an S3 or Temporal error publishing
      // it is logged and must not hold back or fail the scheduled run, which is what the firing is for.
      await publishFiring(deps.webhooks, input).catch((error: unknown) =>
        Context.current().log.warn("the schedule.fired webhook event was not published", {
          error: String(error),
        }),
      );
      return firingStartOf(await start(input));
    },

    async awaitScheduledRun(input) {
      const context = Context.current();
      // Follows the run through continue-as-new to the execution that ends it.
      const handle = context.client.workflow.getHandle(runWorkflowId(ref(input)), input.runId);
      const beat = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        const result: RunResult = await Promise.race([handle.result(), context.cancelled]);
        return { status: result.status, reason: result.reason };
      } catch (error) {
        if (error instanceof WorkflowFailedError) {
          return { status: "failed", reason: error.cause?.message ?? error.message };
        }
        throw error;
      } finally {
        clearInterval(beat);
      }
    },

    async abortScheduledRun(input) {
      // The abort signal only: the run takes it when a worker picks it up, no answer awaited.
      return { aborted: (await runClient().signalAbort(ref(input), input.reason)) === "sent" };
    },
  };
}
