/**
 * The run's failover decisions (run/failover.ts): the models a turn tries, what fails over, and
 * where the next model's entries go (never at a failed call's slots).
 */
import { ActivityFailure, ApplicationFailure, CancelledFailure, RetryState } from "@temporalio/common";
import { FailureType } from "../../../src/core/failure-types";
import {
  allModelsFailedReason,
  failedOverWrites,
  failoverCauseOf,
  sessionModel,
  turnModels,
} from "../../../src/workflows/run/failover";
import { branchFrom, newSlot, type RunRecord } from "../../../src/workflows/run/state";

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

describe("after a failover", () => {
  /** A run whose session ends at entry `p` (seq 4), with a deterministic random source. */
  const openRun = () => {
    let draws = 0;
    const random = () => {
      draws += 1;
      return (draws * 0.618_033_988_7) % 1;
    };
    const clock = { now: () => 1_000, random };
    return { cursor: { nextSeq: 5, leafId: "p" }, clock } as unknown as RunRecord;
  };

  test("the next model's slots are fresh, on a branch beside the failed call's: no seq is handed out twice", () => {
    const run = openRun();
    const failed = newSlot(run);
    branchFrom(run, failed.parentId);
    const change = newSlot(run);
    const answer = newSlot(run);
    expect([failed.seq, change.seq, answer.seq]).toEqual([5, 6, 7]);
    // The failed call's late write (at seq 5) cannot be taken for the next model's switch.
    expect(change.parentId).toBe("p");
    expect(failed.parentId).toBe("p");
    expect(answer.parentId).toBe(change.id);
    expect(new Set([failed.id, change.id, answer.id]).size).toBe(3);

    // A failed switch is branched from too: the third model starts beside both.
    branchFrom(run, failed.parentId);
    expect(newSlot(run)).toMatchObject({ seq: 8, parentId: "p" });
  });

  test("the failed call is closed at its own slots, with its ids: its switch and a failed answer saying why", () => {
    const run = openRun();
    const modelChange = newSlot(run);
    const slot = newSlot(run);
    const cause = { reason: "rate_limit", message: "b: 429 slow down" };
    const writes = failedOverWrites({ modelChange, slot, model: "b" }, cause, 1_000);
    expect(writes.map((write) => write.seq)).toEqual([modelChange.seq, slot.seq]);
    expect(writes.map((write) => [write.entry.id, write.entry.parentId])).toEqual([
      [modelChange.id, modelChange.parentId],
      [slot.id, modelChange.id],
    ]);
    expect(writes[0]?.entry).toMatchObject({ type: "model_change", provider: "keel", modelId: "b" });
    expect(writes[1]?.entry).toMatchObject({
      type: "message",
      message: {
        role: "assistant",
        stopReason: "error",
        model: "b",
        errorMessage: "failed over (rate_limit): b: 429 slow down",
      },
    });
    // A call that was not a switch closes only its answer.
    expect(failedOverWrites({ slot, model: "a" }, cause, 1_000).map((write) => write.seq)).toEqual([
      slot.seq,
    ]);
  });
});
