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

  test("with the batch's results: an assistant entry or a result counts the stored results below it", () => {
    expect(snapshotAncestry(entries, "a1", { withBatchResults: true })).toEqual([["r1", "r2"], "a1", "u1"]);
    expect(snapshotAncestry(entries, "r1", { withBatchResults: true })).toEqual([["r2", "r1"], "a1", "u1"]);
    // Below a user message there are no results of its batch: only its own ancestry.
    expect(snapshotAncestry(entries, "u2", { withBatchResults: true })).toEqual([
      "u2",
      ["r2", "r1"],
      "a1",
      "u1",
    ]);
    // Without it, the assistant entry stands for the state before its batch.
    expect(snapshotAncestry(entries, "a1")).toEqual(["a1", "u1"]);
  });
});
