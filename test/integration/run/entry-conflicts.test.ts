/**
 * A run whose session another writer changed under it: the activity that finds a different entry
 * at its slot fails at once (EntryConflict, no retry) and the run ends failed with the reason.
 */

import { runWorkflowId } from "../../../src/contracts/runs";
import { createMessageEntry } from "../../../src/core/session-entries";
import { SessionNotFoundError } from "../../../src/store/session-errors";
import { eventually, runStageForSuite, slowEchoScenario } from "../../support/run-harness";

jest.setTimeout(120_000);

const stage = runStageForSuite();

test("an entry written at the assistant slot during the model call fails the turn on its first attempt", async () => {
  slowEchoScenario(stage(), "raced", 4_000);
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:raced] hello", mode: "auto" }, stage().settings());

  // The prompt is stored before the (slow) model call starts; the assistant slot is the next seq.
  const slotSeq = await eventually(
    async () => {
      const read = await stage()
        .store.readEntries(ref)
        .catch((error: unknown) =>
          error instanceof SessionNotFoundError ? undefined : Promise.reject(error),
        );
      if (!read) return undefined;
      const { entries, nextSeq } = read;
      const prompted = entries.some((s) => s.entry.type === "message" && s.entry.message.role === "user");
      return prompted ? nextSeq : undefined;
    },
    30_000,
    "the prompt entry",
  );
  await stage().store.putEntry(
    ref,
    slotSeq,
    createMessageEntry(
      { id: "intruder00000001", parentId: null, timestamp: new Date().toISOString() },
      { role: "user", content: "written by someone else", timestamp: Date.now() },
    ),
  );

  const result = await stage().result(ref);
  expect(result.status).toBe("failed");
  expect(result.reason).toContain("intruder00000001");

  const history = await stage().client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
  const events = history.events ?? [];
  const eventWithId = (id: unknown) => events.find((event) => String(event.eventId) === String(id));
  const turnFailure = events
    .flatMap((event) => event.activityTaskFailedEventAttributes ?? [])
    .find(
      (failed) =>
        eventWithId(failed.scheduledEventId)?.activityTaskScheduledEventAttributes?.activityType?.name ===
        "llmTurn",
    );
  expect(turnFailure?.failure?.applicationFailureInfo?.type).toBe("EntryConflict");
  expect(turnFailure?.failure?.message).toContain("intruder00000001");
  // Temporal records only the last attempt's start: attempt 1 means the conflict was not retried.
  expect(eventWithId(turnFailure?.startedEventId)?.activityTaskStartedEventAttributes?.attempt).toBe(1);
});
