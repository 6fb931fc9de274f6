/** The run's failover decisions (run/failover.ts): the models a turn tries and what fails over. */
import { ActivityFailure, ApplicationFailure, CancelledFailure, RetryState } from "@temporalio/common";
import { FailureType } from "../../../src/core/failure-types";
import {
  allModelsFailedReason,
  failoverCauseOf,
  sessionModel,
  turnModels,
} from "../../../src/workflows/run/failover";

const failed = (cause: Error) =>
  new ActivityFailure("Activity task failed", "llmTurn", "7", RetryState.NON_RETRYABLE_FAILURE, "w", cause);

const run = (model: string, fallbackModels?: string[], activeModel?: string) => ({
  next: { model, thinkingLevel: "off" as const },
  settings: { fallbackModels } as never,
  ...(activeModel !== undefined ? { activeModel } : {}),
});

test("every turn starts from the run's next model, then its fallbacks in order, each once", () => {
  expect(turnModels(run("a", ["b", "c"]))).toEqual(["a", "b", "c"]);
  expect(turnModels(run("a", ["b", "a", "b"]))).toEqual(["a", "b"]);
  expect(turnModels(run("a"))).toEqual(["a"]);
  // A hook that changed the next model puts it first; the list keeps its order after it.
  expect(turnModels(run("c", ["b", "c"]))).toEqual(["c", "b"]);
  // The model a failover left the session on does not change where the turn starts.
  expect(turnModels(run("a", ["b"], "b"))).toEqual(["a", "b"]);
});

test("the session's model is the one that answered last, else the run's next", () => {
  expect(sessionModel(run("a", ["b"]))).toBe("a");
  expect(sessionModel(run("a", ["b"], "b"))).toBe("b");
});

test("a provider error fails over with the reason its details give; spent retries without details too", () => {
  const withDetails = ApplicationFailure.create({
    message: "a: 529 Overloaded",
    type: FailureType.retryableLlm,
    nonRetryable: true,
    details: [{ failover: "overloaded" }],
  });
  expect(failoverCauseOf(failed(withDetails))).toEqual({
    reason: "overloaded",
    message: "a: 529 Overloaded",
  });
  const older = ApplicationFailure.create({
    message: "a: 500",
    type: FailureType.retryableLlm,
    nonRetryable: true,
  });
  expect(failoverCauseOf(failed(older))).toEqual({ reason: "retries_exhausted", message: "a: 500" });
});

test("a refused request, an unknown model, a cancellation or a bug does not fail over", () => {
  expect(
    failoverCauseOf(failed(ApplicationFailure.nonRetryable("bad key", FailureType.nonRetryableLlm))),
  ).toBeUndefined();
  expect(
    failoverCauseOf(failed(ApplicationFailure.nonRetryable("no", FailureType.unknownModel))),
  ).toBeUndefined();
  expect(failoverCauseOf(failed(new CancelledFailure("cancelled")))).toBeUndefined();
  expect(failoverCauseOf(new Error("bug"))).toBeUndefined();
});

test("a run whose every model failed names each model and its error", () => {
  expect(
    allModelsFailedReason([
      { model: "a", cause: { reason: "overloaded", message: "a: 529 Overloaded" } },
      { model: "b", cause: { reason: "circuit_open", message: "b: not sent" } },
    ]),
  ).toBe("every model failed: a (overloaded): a: 529 Overloaded; b (circuit_open): b: not sent");
});
