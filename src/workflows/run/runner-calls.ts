/**
 * Calls of a runner environment (`RunSettings.environment`): each is scheduled on the
 * environment's task queue (a launched environment's: the session's), where the API hands it to
 * a runner's long poll as soon as it is scheduled and completes it with the runner's result
 * (environments/calls.ts). No worker runs it; a worker only watches a call that has not ended
 * quickly (it keeps a launched environment's runner up, and says in the run's stream that the call
 * waits for a runner) and stores the error result of one no runner took in time.
 */
import { CancellationScope, sleep, uuid4 } from "@temporalio/workflow";
import type { RunnerEnvironmentKind } from "../../contracts/activities";
import { runnerTaskQueue } from "../../contracts/task-queues";
import type { UnclaimedWhy } from "../../contracts/unclaimed";
import {
  environments,
  isScheduleToStartTimeout,
  runnerQueueActivities,
  runnerWatchActivities,
} from "./activity-options";
import type { RunContext } from "./context";

/** A call of a runner environment that has not ended after this long gets a watcher (launched: at once). */
const WATCH_AFTER_MS = 1_000;

/**
 * Runs `schedule` on a runner of `environment`: `unclaimed` answers instead when the environment
 * is gone or cannot launch runners, or when no runner took the call within the run's wait.
 */
export async function onRunner<T>(
  ctx: RunContext,
  environment: string,
  call: {
    toolCall?: { id: string; name: string };
    schedule: (activities: ReturnType<typeof runnerQueueActivities>) => Promise<T>;
    unclaimed: (why: UnclaimedWhy) => Promise<T>;
  },
): Promise<T> {
  const { run } = ctx;
  // Not cancellable: an interrupt during the first call must not leave a cancelled answer for the
  // run's later calls (a failed lookup is asked again by the next call).
  ctx.environmentKind ??= CancellationScope.nonCancellable(() =>
    environments.describeEnvironment({ tenantId: run.ref.tenantId, environment }),
  ).catch((error: unknown) => {
    ctx.environmentKind = undefined;
    throw error;
  });
  const kind: RunnerEnvironmentKind = await ctx.environmentKind;
  if (kind === "missing" || kind === "unlaunchable") return call.unclaimed(kind);
  const activityId = `runner-${uuid4()}`;
  const queue = runnerTaskQueue(
    run.ref.tenantId,
    environment,
    kind === "launched" ? run.ref.sessionId : undefined,
  );
  // Inside the caller's scope: an abort cancels the watcher with the call.
  const watcher = new CancellationScope();
  void watcher
    .run(async () => {
      if (kind === "runner") await sleep(WATCH_AFTER_MS);
      await runnerWatchActivities(run.settings.timeouts).watchRunnerCall({
        ...run.ref,
        environment,
        kind,
        activityId,
        ...(call.toolCall ? { toolCall: call.toolCall } : {}),
      });
    })
    // Cancelled when the call ends; a watcher that failed leaves the call to its own timeouts.
    .catch(() => undefined);
  try {
    return await call.schedule(runnerQueueActivities(queue, activityId, run.settings.timeouts));
  } catch (error) {
    if (isScheduleToStartTimeout(error)) return call.unclaimed("timeout");
    throw error;
  } finally {
    watcher.cancel();
  }
}
