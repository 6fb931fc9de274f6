import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure } from "@temporalio/common";
import { describeFailure, runErrorOf } from "../../../src/workflows/run/failures";

const failed = (cause: Error) =>
  new ActivityFailure(
    "Activity task failed",
    "llmTurn",
    "7",
    RetryState.MAXIMUM_ATTEMPTS_REACHED,
    "w",
    cause,
  );

test("an application failure is named by its failure type, with its message", () => {
  const error = failed(ApplicationFailure.nonRetryable("model nope is unknown", "UnknownModel"));
  expect(runErrorOf(error)).toEqual({ type: "UnknownModel", message: "model nope is unknown" });
  expect(describeFailure(error)).toBe("llmTurn failed: UnknownModel: model nope is unknown");
});

test("a timeout is named by its kind", () => {
  const error = failed(new TimeoutFailure("activity Heartbeat timeout", undefined, "HEARTBEAT"));
  expect(runErrorOf(error)).toEqual({ type: "HEARTBEATTimeout", message: "activity Heartbeat timeout" });
  expect(describeFailure(error)).toBe(
    "llmTurn failed: TimeoutFailure (HEARTBEAT timeout): activity Heartbeat timeout",
  );
});

test("any other cause is named by its class; no cause falls back to the activity failure", () => {
  expect(runErrorOf(failed(new RangeError("too far")))).toEqual({ type: "RangeError", message: "too far" });
  const bare = new ActivityFailure("Activity task failed", "executeTool", "7", RetryState.TIMEOUT, "w");
  expect(runErrorOf(bare)).toEqual({ type: "ActivityFailure", message: "Activity task failed" });
  expect(describeFailure(bare)).toBe("executeTool failed: error: Activity task failed");
});
