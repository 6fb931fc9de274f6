/**
 * The one way a message reaches a session, wherever it comes from: the API's messages, a Slack
 * thread, a schedule's firing (docs/api.md, "Starts and deliveries"). A message that would start
 * a run is admitted under the tenant's quotas first; the message is then delivered (a start, or
 * a delivery to the live run); the quota slot an admitted start took is given back when no run
 * started (refused, failed, or the message went to a run started concurrently), and a run that
 * started is counted in the tenant's usage. Every result, refusals included, is a typed outcome:
 * each caller maps it to its own answer (a problem, a thread reply, a firing's result or
 * failure) and decides nothing of its own.
 */

import type { DeliverRequest, DeliveryOutcome, RunSettings, SessionRef } from "../contracts/runs";
import { DeliveryRefusal } from "../core/failure-types";
import { QuotaExceededError, type QuotaGate } from "../tenants/admission";
import { admitRunStart } from "../tenants/run-quotas";
import type { QuotaName, Quotas } from "../tenants/types";
import type { TenantUsage } from "../tenants/usage";
import { type Delivered, DeliveryRefusedError } from "./delivery";
import type { RunClient } from "./run-client";

/** Why the run refused a message: one of the run's refusal types. */
export type DeliveryRefusalType = (typeof DeliveryRefusal)[keyof typeof DeliveryRefusal];

/** The run the message reached. */
interface RunReached {
  workflowId: string;
  runId: string;
}

/** What the run answered about a message it took: the queue it waits in, and a hand-over. */
interface RunAnswer extends RunReached {
  /** Messages waiting in the queue the message went to, itself included. */
  queueLength: number;
  /** The run had decided to end: the session's next execution reads the message. */
  handedOver?: true;
}

/**
 * How a message went:
 * - `started`: it started the session's run (admitted under the quotas, counted in usage);
 * - `delivered`: it reached the live run, which steered, queued or was interrupted by it;
 * - `pending`: it reached the live run, whose workers did not answer in time (Temporal has it);
 * - `quota-exceeded`: a start over one of the tenant's quotas; nothing started;
 * - `refused`: the run refused it (busy, queue full, ending, invalid); nothing started.
 */
export type MessageOutcome =
  | (RunAnswer & { type: "started" })
  | (RunAnswer & { type: "delivered"; delivery: Exclude<DeliveryOutcome, "started"> })
  | (RunReached & { type: "pending" })
  | MessageRefusal;

export type MessageRefusal =
  | { type: "quota-exceeded"; quota: QuotaName; limit: number; retryAfterSeconds: number; message: string }
  | { type: "refused"; refusal: DeliveryRefusalType; message: string };

export type MessageTaken = Exclude<MessageOutcome, MessageRefusal>;

/** What the one start path works with: the deployment's (or the worker's) services. */
export interface StartServices {
  runs: RunClient;
  /** The quota gate of the tenants; absent: no tenant store, so no quotas. */
  quotas?: QuotaGate;
  /** Where a started run is counted; absent: not counted. */
  usage?: TenantUsage;
  /**
   * Told when a started run could not be counted: the run has started and the message must not be
   * sent again, so this is not a failure of the start.
   */
  warn: (msg: string, fields: Record<string, unknown>) => void;
  now: () => number;
}

export interface SessionMessage {
  ref: SessionRef;
  request: DeliverRequest;
  /** The settings of the run the message starts (a live run keeps its own). */
  settings: RunSettings;
  /** The tenant's quotas (absent or empty: none). */
  quotas: Quotas | undefined;
  /** The delivery id a retry repeats, so it is not delivered twice (see `DeliverOptions`). */
  deliveryId?: string;
  /**
   * The caller's own step once the message is admitted and before it goes out (Slack records its
   * thread): what fails there gives the quota slot back like a failed delivery.
   */
  beforeDelivery?: () => Promise<void>;
}

/** Starts the session's run with the message or delivers it to the live run; see the file's top. */
export async function startOrDeliver(
  services: StartServices,
  message: SessionMessage,
): Promise<MessageOutcome> {
  const { runs, quotas } = services;
  const { ref } = message;
  let admission: Awaited<ReturnType<typeof admitRunStart>>;
  try {
    admission = quotas && (await admitRunStart(quotas, message.quotas, ref, runs));
  } catch (error) {
    if (error instanceof QuotaExceededError) return quotaRefusal(error);
    throw error;
  }
  let delivered: Delivered;
  try {
    await message.beforeDelivery?.();
    delivered = await runs.deliver(
      ref,
      message.request,
      message.settings,
      message.deliveryId !== undefined ? { deliveryId: message.deliveryId } : {},
    );
  } catch (error) {
    await admission?.release();
    if (error instanceof DeliveryRefusedError) return deliveryRefusal(error);
    throw error;
  }
  // Not a start (a concurrent message started the run first, and this one went to it): the
  // admission was not used.
  if (delivered.delivery !== "started") await admission?.release();
  else await recordStart(services, ref, delivered.runId);
  return outcomeOf(delivered);
}

export function isRefusal(outcome: MessageOutcome): outcome is MessageRefusal {
  return outcome.type === "quota-exceeded" || outcome.type === "refused";
}

/** The API's `delivery` word for a message taken: the run's answer, or `pending`. */
export function deliveryOf(outcome: MessageTaken): DeliveryOutcome | "pending" {
  return outcome.type === "delivered" ? outcome.delivery : outcome.type;
}

/** Counts the run in its tenant's usage (by the one delivery that started it); a failed write is only told. */
async function recordStart(services: StartServices, ref: SessionRef, runId: string): Promise<void> {
  try {
    await services.usage?.recordRun(ref.tenantId, { atMs: services.now() });
  } catch (error) {
    services.warn("the run start was not recorded in usage", { ...ref, runId, error: String(error) });
  }
}

function outcomeOf(delivered: Delivered): MessageTaken {
  const { workflowId, runId } = delivered;
  if (delivered.delivery === "pending") return { type: "pending", workflowId, runId };
  const answer: RunAnswer = {
    workflowId,
    runId,
    queueLength: delivered.queueLength,
    ...(delivered.handedOver ? { handedOver: true as const } : {}),
  };
  return delivered.delivery === "started"
    ? { type: "started", ...answer }
    : { type: "delivered", delivery: delivered.delivery, ...answer };
}

function quotaRefusal(error: QuotaExceededError): MessageRefusal {
  const { quota, limit, retryAfterSeconds, message } = error;
  return { type: "quota-exceeded", quota, limit, retryAfterSeconds, message };
}

const REFUSAL_TYPES: readonly string[] = Object.values(DeliveryRefusal);

function deliveryRefusal(error: DeliveryRefusedError): MessageRefusal {
  // A type the run does not name is a refusal of the message itself.
  const refusal = REFUSAL_TYPES.includes(error.type)
    ? (error.type as DeliveryRefusalType)
    : DeliveryRefusal.invalid;
  return { type: "refused", refusal, message: error.message };
}
