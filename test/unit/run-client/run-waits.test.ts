/** What a live run waits for, from Temporal's description of its pending work. */
import { type google, temporal } from "@temporalio/proto";
import { runWaitOf } from "../../../src/run-client/run-waits";

const { PendingActivityState, PendingWorkflowTaskState } = temporal.api.enums.v1;
const NOW = 1_000_000;
/** A protobuf timestamp (the client decodes seconds as a Long; a number reads the same). */
const at = (ms: number) =>
  ({
    seconds: Math.floor(ms / 1000),
    nanos: (ms % 1000) * 1e6,
  }) as unknown as google.protobuf.ITimestamp;
const onRunner = {
  activityType: { name: "executeToolOnRunner" },
  activityOptions: { taskQueue: { name: "keel-runner/t1/laptop" } },
};

test("a runner call's retry not taken: the environment, and the lost attempt's output is old", () => {
  const wait = runWaitOf(
    {
      activities: [
        {
          ...onRunner,
          state: PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
          attempt: 2,
          scheduledTime: at(NOW - 50_000),
        },
      ],
    },
    NOW,
  );
  expect(wait).toEqual({
    type: "waiting",
    on: "environment",
    environment: "laptop",
    attempt: 2,
    staleUpTo: 1,
    since: NOW - 50_000,
    message:
      "waiting for environment `laptop`: the runner that took this call stopped answering, and no runner has taken it again yet",
  });
});

test("a tool call whose worker stopped heartbeating: a worker, and that attempt's output is old", () => {
  const wait = runWaitOf(
    {
      activities: [
        {
          activityType: { name: "executeTool" },
          state: PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
          attempt: 1,
          lastHeartbeatTime: at(NOW - 5_000),
        },
      ],
    },
    NOW,
  );
  expect(wait).toMatchObject({ on: "worker", attempt: 1, staleUpTo: 1, since: NOW - 5_000 });
  expect(wait?.message).toMatch(/^waiting for a worker: the worker running a tool call stopped reporting/);
});

test("work under way, a watcher, or a wait too short to mention: no wait", () => {
  const started = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
  expect(
    runWaitOf(
      {
        activities: [
          { activityType: { name: "executeTool" }, state: started, lastHeartbeatTime: at(NOW - 1_000) },
          { activityType: { name: "watchRunnerCall" }, state: started, lastHeartbeatTime: at(NOW - 60_000) },
          {
            activityType: { name: "llmTurn" },
            state: PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
            attempt: 1,
            scheduledTime: at(NOW - 500),
          },
        ],
        workflowTask: {
          state: PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED,
          scheduledTime: at(NOW - 500),
        },
      },
      NOW,
    ),
  ).toBeUndefined();
});

test("the run's next step not taken for seconds: a worker", () => {
  const wait = runWaitOf(
    {
      workflowTask: {
        state: PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED,
        scheduledTime: at(NOW - 9_000),
      },
    },
    NOW,
  );
  expect(wait).toMatchObject({ on: "worker", since: NOW - 9_000 });
  expect(wait?.staleUpTo).toBeUndefined();
});
