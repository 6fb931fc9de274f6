/**
 * The worker's part in the calls of a runner environment (`RunSettings.environment`): it runs
 * none of them. The workflow schedules each call (`executeToolOnRunner`, `listMcpToolsOnRunner`)
 * on the environment's task queue (environments/task-queues.ts), which no worker polls: the API
 * hands its tasks to the runners' long polls, relays their heartbeats and completes them by task
 * token (environments/calls.ts). What a worker does here:
 *
 * - `describeEnvironment`: the environment's kind, once per run (a launched environment's calls
 *   go to one queue per session, for the session's own runner);
 * - `watchRunnerCall`, beside a call that has not ended quickly: keeps a launched environment's
 *   runner up (one that died or stopped idle is replaced) and tells the run's stream, once per
 *   attempt, that the call waits for a runner while Temporal says that attempt is not taken yet
 *   (a retry after a runner died mid-call waits again, and says so again);
 * - `storeUnclaimedRunnerResult`: the error result of a call no runner took in time.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ApplicationFailure, Context } from "@temporalio/activity";
import { temporal } from "@temporalio/proto";
import type {
  EnvironmentKindInput,
  ExecuteToolResult,
  RunnerEnvironmentKind,
  UnclaimedRunnerCallInput,
  WatchRunnerCallInput,
} from "../contracts/activities";
import { unclaimedText } from "../contracts/unclaimed";
import { environmentWaitText } from "../contracts/waits";
import { UNKNOWN_OUTCOME_TEXT } from "../core/markers";
import { runnerCallId } from "../environments/store";
import {
  attemptOf,
  refusal,
  startedBefore,
  storedResult,
  storeResult,
  type ToolCallDeps,
  toolCallOf,
} from "../tool-calls/lifecycle";
import type { ActivityDeps } from "./deps";
import { whileHeartbeating } from "./heartbeat";
import { DEFAULT_LIVE_EVENT_OPTIONS, liveEventSink } from "./live-events";

/** How often a watcher asks Temporal whether its call was taken (and a launcher for its runner). */
const WATCH_POLL_MS = 1_000;

export function runnerActivities({
  store,
  environments,
  markers,
  launcher,
  stopping,
  liveEvents = DEFAULT_LIVE_EVENT_OPTIONS,
}: ActivityDeps) {
  return {
    /**
     * The kind of the run's environment; `missing` when the tenant has none of that name (deleted
     * since the run started), `unlaunchable` for a launched one this deployment's workers cannot
     * start runners for (no KEEL_LAUNCHER).
     */
    async describeEnvironment(input: EnvironmentKindInput): Promise<RunnerEnvironmentKind> {
      if (!environments) throw new Error("this worker has no environment store");
      const environment = await environments.get(input.tenantId, input.environment);
      if (!environment) return "missing";
      if (environment.kind === "launched" && !launcher) return "unlaunchable";
      return environment.kind;
    },

    /**
     * Runs beside a call on the environment's queue until the workflow cancels it (the call
     * ended). Never fails the call: a launcher's error is logged and tried again. It outlives the
     * runner's claim because a runner may die mid-call: Temporal then schedules the next attempt,
     * which waits for a runner as the first did, and the run's stream must say so again.
     */
    async watchRunnerCall(input: WatchRunnerCallInput): Promise<void> {
      const ctx = Context.current();
      const { workflowExecution, workflowNamespace } = ctx.info;
      if (!workflowExecution) return; // only ever scheduled by a workflow
      const waiting = `waiting for environment \`${input.environment}\``;
      const launch =
        input.kind === "launched" && launcher
          ? () =>
              launcher
                .ensure({
                  tenantId: input.tenantId,
                  environment: input.environment,
                  sessionId: input.sessionId,
                })
                .catch((error: unknown) => ctx.log.warn("runner launch failed", { error: String(error) }))
          : undefined;
      const live = liveEventSink(liveEvents);
      const ended = stopping ? AbortSignal.any([ctx.cancellationSignal, stopping]) : ctx.cancellationSignal;
      /** The last attempt the stream was told waits (0: none yet). */
      let announced = 0;
      try {
        await whileHeartbeating(ctx, waiting, async () => {
          while (!ended.aborted) {
            await launch?.();
            const described = await ctx.client.workflowService.describeWorkflowExecution({
              namespace: workflowNamespace,
              execution: { workflowId: workflowExecution.workflowId, runId: workflowExecution.runId },
            });
            const pending = described.pendingActivities?.find(
              (activity) => activity.activityId === input.activityId,
            );
            if (!pending) return;
            const taken =
              pending.state !== temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED;
            const attempt = pending.attempt ?? 1;
            if (!taken && attempt > announced && input.toolCall) {
              announced = attempt;
              // The run's stream says what the call waits for (the Temporal UI: the heartbeat's phase).
              live.publish({
                type: "tool_execution_update",
                toolCallId: input.toolCall.id,
                toolName: input.toolCall.name,
                attempt,
                partial: `[${environmentWaitText(input.environment, attempt)}]`,
              });
            }
            await sleep(WATCH_POLL_MS, undefined, { signal: ended }).catch(() => undefined);
          }
        });
      } finally {
        await live.close();
      }
      // The call goes on; the watch goes on at another worker (Temporal retries it there).
      if (stopping?.aborted && !ctx.cancellationSignal.aborted)
        throw ApplicationFailure.retryable("this worker is stopping", "WorkerStopping");
    },

    /**
     * The result of a call no runner took within its wait: an error saying so, or, for an
     * `unsafe` call an earlier attempt's runner started (it died, and no runner took the retry),
     * the unknown-outcome result. A result stored meanwhile is adopted.
     */
    async storeUnclaimedRunnerResult(input: UnclaimedRunnerCallInput): Promise<ExecuteToolResult> {
      const lifecycle: ToolCallDeps = { store, markers, now: Date.now };
      // The lifecycle's rules with this activity's attempt: a result stored meanwhile is adopted
      // (where they skip the look, the conditional write below finds it).
      const attempt = attemptOf(input, Context.current().info.attempt);
      const callId = runnerCallId(input.sessionId, input.slot.seq);
      const [call, stored, claimed] = await Promise.all([
        toolCallOf(store, input),
        storedResult(lifecycle, attempt),
        input.why === "timeout"
          ? environments?.readCall(input.tenantId, input.environment, callId)
          : undefined,
      ]);
      // An earlier attempt's claim, whose runner stopped answering: it goes with this answer.
      if (claimed) await environments?.removeCall(input.tenantId, input.environment, callId);
      if (stored) return stored;
      const started = await startedBefore(lifecycle, attempt);
      const text = started
        ? UNKNOWN_OUTCOME_TEXT
        : unclaimedText(input.environment, input.why, input.waitMs, "call", claimed !== undefined);
      const { result } = await storeResult(lifecycle, attempt, refusal(text), {
        outcome: started ? "unknown_outcome" : "executed",
        ...(input.argumentsOverride
          ? { edit: { requested: call.arguments, executed: input.argumentsOverride } }
          : {}),
      });
      return result;
    },
  };
}
