/**
 * Activities of a schedule's firing (`scheduledRun`): start the run as a client would (through
 * `RunClient.deliver`, so a firing starts or continues a session exactly as `POST …/messages`
 * does), wait for that run to end, and abort it when the schedule's overlap policy cancels the
 * firing. They use the worker's own Temporal client. A start is admitted under the tenant's
 * quotas as the API admits one: over a quota the firing fails, saying which, and nothing starts.
 */
import { ApplicationFailure, Context } from "@temporalio/activity";
import { WorkflowFailedError } from "@temporalio/client";
import { FailureType } from "../core/failure-types";
import type { SessionRef } from "../core/session-ref";
import { RunClient } from "../run-client/run-client";
import type { Admission } from "../tenants/admission";
import { QuotaExceededError } from "../tenants/admission";
import { admitRunStart, quotaGate } from "../tenants/run-quotas";
import type { RunSettings } from "../workflows/types";
import { type RunResult, runWorkflowId } from "../workflows/types";
import type { ActivityDeps } from "./deps";

export interface StartScheduledRunInput extends SessionRef {
  text: string;
  settings: RunSettings;
  /** The delivery id: one per firing, so a retried start never delivers twice. */
  deliveryId: string;
}

export interface StartScheduledRunResult {
  runId: string;
  /** How the session took the prompt (`started`, or `queued` behind a run already live, …). */
  delivery: string;
}

export interface AwaitScheduledRunInput extends SessionRef {
  runId: string;
}

export interface ScheduledRunEnd {
  status: string;
  reason: string;
}

export interface AbortScheduledRunInput extends SessionRef {
  reason: string;
}

export interface ScheduledRunActivities {
  startScheduledRun(input: StartScheduledRunInput): Promise<StartScheduledRunResult>;
  awaitScheduledRun(input: AwaitScheduledRunInput): Promise<ScheduledRunEnd>;
  abortScheduledRun(input: AbortScheduledRunInput): Promise<{ aborted: boolean }>;
}

/** How often the wait heartbeats (cancellation reaches it with a heartbeat). */
const HEARTBEAT_EVERY_MS = 2_000;

function runClient(): RunClient {
  const context = Context.current();
  return new RunClient(context.client, context.info.taskQueue);
}

const ref = (input: SessionRef): SessionRef => ({ tenantId: input.tenantId, sessionId: input.sessionId });

export function scheduledRunActivities(
  deps: Pick<ActivityDeps, "tenants" | "usage"> = {},
): ScheduledRunActivities {
  /** Admits the firing's start under the tenant's quotas; a firing over one fails for good, saying which. */
  async function admit(runs: RunClient, input: SessionRef): Promise<Admission | undefined> {
    const { tenants, usage } = deps;
    if (!tenants || !usage) return undefined;
    const { quotas } = await tenants.getSettings(input.tenantId);
    try {
      return await admitRunStart(
        quotaGate(tenants, usage, async () => runs),
        quotas,
        ref(input),
        runs,
      );
    } catch (error) {
      if (!(error instanceof QuotaExceededError)) throw error;
      throw ApplicationFailure.nonRetryable(
        `the firing started no run: ${error.message}`,
        FailureType.quotaExceeded,
      );
    }
  }

  return {
    async startScheduledRun(input) {
      const runs = runClient();
      const admission = await admit(runs, input);
      let delivered: Awaited<ReturnType<RunClient["deliver"]>>;
      try {
        // A follow-up: a run already live in a named session reads the prompt when it would stop.
        delivered = await runs.deliver(ref(input), { text: input.text, mode: "followUp" }, input.settings, {
          deliveryId: input.deliveryId,
        });
      } catch (error) {
        await admission?.release();
        throw error;
      }
      if (delivered.delivery !== "started") await admission?.release();
      // Counted once per run id, as a start through the API is.
      else
        await deps.usage?.recordRun(input.tenantId, {
          ...ref(input),
          runId: delivered.runId,
          atMs: Date.now(),
        });
      return { runId: delivered.runId, delivery: delivered.delivery };
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
