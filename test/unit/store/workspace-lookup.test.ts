import type { AgentMessage } from "../../../src/core/messages";
import { createMessageEntry } from "../../../src/core/session-entries";
import type { SessionEntry } from "../../../src/core/session-types";
import { snapshotAncestry } from "../../../src/store/workspace-lookup";
import { assistant, toolCall, toolResult, user } from "../core/helpers";

const entry = (id: string, parentId: string | null, message: AgentMessage): SessionEntry =>
  createMessageEntry({ id, parentId, timestamp: "2026-01-01T00:00:00.000Z" }, message);

// u1 → a1 (two calls) → r1 → r2 → u2 → a2 (one call) → r3
const entries: SessionEntry[] = [
  entry("u1", null, user("go")),
  entry("a1", "u1", assistant([toolCall("c1", "write"), toolCall("c2", "write")])),
  entry("r1", "a1", toolResult("c1", "ok", "write")),
  entry("r2", "r1", toolResult("c2", "ok", "write")),
  entry("u2", "r2", user("again")),
  entry("a2", "u2", assistant([toolCall("c3", "write")])),
  entry("r3", "a2", toolResult("c3", "ok", "write")),
];

describe("snapshotAncestry", () => {
  test("groups the consecutive tool results of each batch, nearest first", () => {
    expect(snapshotAncestry(entries, "r3")).toEqual([["r3"], "a2", "u2", ["r2", "r1"], "a1", "u1"]);
    expect(snapshotAncestry(entries, "u2")).toEqual(["u2", ["r2", "r1"], "a1", "u1"]);
  });

  test("an entry that is not stored has no ancestry", () => {
    expect(snapshotAncestry(entries, "missing")).toBeUndefined();
  });

  test("with the batch's results: a batch in progress counts the results stored below its assistant entry", () => {
    // The batch of a2 in progress: r3 is stored, nothing else below a2.
    expect(snapshotAncestry(entries, "a2", { withBatchResults: true })).toEqual([
      ["r3"],
      "a2",
      "u2",
      ["r2", "r1"],
      "a1",
      "u1",
    ]);
    // A call of a1's batch whose leaf is r1 (the result before its own slot).
    const inProgress = entries.slice(0, 4);
    expect(snapshotAncestry(inProgress, "a1", { withBatchResults: true })).toEqual([
      ["r1", "r2"],
      "a1",
      "u1",
    ]);
    expect(snapshotAncestry(inProgress, "r1", { withBatchResults: true })).toEqual([
      ["r2", "r1"],
      "a1",
      "u1",
    ]);
    // Without it, the assistant entry stands for the state before its batch.
    expect(snapshotAncestry(inProgress, "a1")).toEqual(["a1", "u1"]);
  });

  test("with the batch's results: anything but results below the leaf (a later turn, a branch to it) leaves them out", () => {
    expect(snapshotAncestry(entries, "a1", { withBatchResults: true })).toEqual(["a1", "u1"]);
    expect(snapshotAncestry(entries, "r1", { withBatchResults: true })).toEqual([["r1"], "a1", "u1"]);
    const branched = [...entries.slice(0, 4), entry("b1", "a1", user("branch summary"))];
    expect(snapshotAncestry(branched, "a1", { withBatchResults: true })).toEqual(["a1", "u1"]);
  });
});
