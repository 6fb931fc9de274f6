import { join } from "node:path";
import fc from "fast-check";
import {
  buildBranchSummaryRequest,
  collectEntriesForBranchSummary,
  composeBranchSummary,
  prepareBranchEntries,
} from "../../../src/core/branch-summary";
import {
  buildCompactionRequests,
  compactionEntryFor,
  findCutPoint,
  prepareCompaction,
  serializeConversation,
  TOOL_RESULT_MAX_CHARS,
} from "../../../src/core/compaction";
import { convertToLlm, type Message } from "../../../src/core/messages";
import { parseSession } from "../../../src/core/session-codec";
import { createMessageEntry } from "../../../src/core/session-entries";
import { buildContext, indexSession, pathToRoot } from "../../../src/core/session-tree";
import type { SessionEntry } from "../../../src/core/session-types";
import { SUMMARIZATION_PROMPT, UPDATE_SUMMARIZATION_PROMPT } from "../../../src/core/summary-prompts";
import { estimateContextTokens, estimateTokens, shouldCompact } from "../../../src/core/tokens";
import {
  assistant,
  PI_FIXTURES,
  readFixture,
  runPiHelper,
  SESSION_FIXTURES,
  toolCall,
  toolResult,
  user,
} from "./helpers";

function leafPath(dir: string, name: string): SessionEntry[] {
  const { entries } = parseSession(readFixture(dir, name));
  const index = indexSession(entries);
  return pathToRoot(index.byId, index.leafId!);
}

interface PiCompaction {
  pathIds: string[];
  cuts: { firstKeptEntryIndex: number; turnStartIndex: number; isSplitTurn: boolean }[];
  estimates: number[];
  serialized: string;
  branches: { count: number; totalTokens: number; read: string[]; edited: string[] }[];
}

describe("compaction planning matches pi", () => {
  it.each([
    [PI_FIXTURES, "before-compaction.jsonl"],
    [PI_FIXTURES, "large-session.jsonl"],
    [SESSION_FIXTURES, "branches-labels.jsonl"],
    [SESSION_FIXTURES, "two-compactions.jsonl"],
    [SESSION_FIXTURES, "split-turn.jsonl"],
  ])("%s/%s: cut points, token estimates, serialization, branch fitting", (dir, name) => {
    const pi = runPiHelper<PiCompaction>("pi-compaction.mjs", [join(dir, name)]);
    const path = leafPath(dir, name);
    expect(path).toHaveLength(pi.pathIds.length);
    const budgets = [0, 100, 1000, 5000, 20000, 50000, 10_000_000];
    expect(budgets.map((k) => findCutPoint(path, 0, path.length, k))).toEqual(pi.cuts);
    const messages = buildContext(path).messages;
    expect(messages.map(estimateTokens)).toEqual(pi.estimates);
    expect(serializeConversation(convertToLlm(messages))).toBe(pi.serialized);
    const fitted = [0, 500, 5000, 50000].map((budget) => {
      const r = prepareBranchEntries(path, budget);
      return { count: r.messages.length, totalTokens: r.totalTokens };
    });
    expect(fitted).toEqual(pi.branches.map(({ count, totalTokens }) => ({ count, totalTokens })));
  });
});

describe("prepareCompaction", () => {
  it("merges with the previous compaction and carries its file lists", () => {
    const path = leafPath(SESSION_FIXTURES, "two-compactions.jsonl");
    const preparation = prepareCompaction(path, { reserveTokens: 1000, keepRecentTokens: 1 })!;
    expect(preparation.previousSummary).toBe("## Goal\nRead files 1-3, edit file4.");
    // Only what follows the previous kept part is summarized: turn 5 on.
    expect(preparation.messagesToSummarize[0]).toMatchObject({
      role: "user",
      content: [{ text: "Turn 5: edit file5.ts" }],
    });
    expect(preparation.fileDetails).toEqual({
      readFiles: ["file1.ts", "file2.ts", "file3.ts"],
      modifiedFiles: ["file4.ts", "file5.ts"],
    });
    expect(preparation.tokensBefore).toBe(estimateContextTokens(buildContext(path).messages).tokens);
    const requests = buildCompactionRequests(preparation, "focus on edits");
    expect(requests.history.prompt).toContain(
      "<previous-summary>\n## Goal\nRead files 1-3, edit file4.\n</previous-summary>",
    );
    expect(requests.history.prompt).toContain(UPDATE_SUMMARIZATION_PROMPT);
    expect(requests.history.prompt.endsWith("Additional focus: focus on edits")).toBe(true);
    expect(requests.history.maxTokens).toBe(800);
    // A 1-token budget cuts at the final answer, inside turn 6: its prefix is summarized apart.
    expect(preparation.isSplitTurn).toBe(true);
    expect(requests.turnPrefix?.prompt).toContain("[User]: Turn 6: summarize.");
  });

  it("detects a split turn and summarizes its prefix apart", () => {
    const entries: SessionEntry[] = [];
    const push = (message: Message) =>
      entries.push(
        createMessageEntry(
          {
            id: `e${entries.length}`,
            parentId: entries.length ? `e${entries.length - 1}` : null,
            timestamp: "2026-01-01T00:00:00.000Z",
          },
          message,
        ),
      );
    push(user("Big task"));
    for (let i = 0; i < 6; i++) {
      push(assistant([toolCall(`c${i}`, i % 2 ? "edit" : "read", { path: `f${i}.ts` })]));
      push(toolResult(`c${i}`, "r".repeat(4000)));
    }
    const preparation = prepareCompaction(entries, { reserveTokens: 2000, keepRecentTokens: 2500 })!;
    expect(preparation.isSplitTurn).toBe(true);
    expect(preparation.messagesToSummarize).toEqual([]);
    expect(preparation.turnPrefixMessages[0]).toMatchObject({ role: "user" });
    const firstKept = entries.find((e) => e.id === preparation.firstKeptEntryId)!;
    expect(firstKept.type === "message" && firstKept.message.role).toBe("assistant");
    const requests = buildCompactionRequests(preparation);
    expect(requests.turnPrefix?.maxTokens).toBe(1000);
    expect(requests.history.prompt).toContain(SUMMARIZATION_PROMPT);
    const entry = compactionEntryFor(
      { id: "cmp", parentId: "e12", timestamp: "2026-01-01T00:01:00.000Z" },
      preparation,
      "history",
      "prefix",
    );
    expect(entry.summary).toMatch(
      /^No prior history\.\n\n---\n\n\*\*Turn Context \(split turn\):\*\*\n\nprefix/,
    );
    expect(entry.summary).toContain("<modified-files>");
    expect(entry).toMatchObject({
      type: "compaction",
      firstKeptEntryId: preparation.firstKeptEntryId,
      details: preparation.fileDetails,
    });
    // The new compaction yields a context that starts with its summary and keeps the call/result pairs.
    const context = buildContext([...entries, entry]);
    expect(context.messages[0]).toMatchObject({ role: "compactionSummary" });
  });

  it("refuses to compact right after a compaction", () => {
    const path = leafPath(SESSION_FIXTURES, "split-turn.jsonl");
    expect(prepareCompaction(path.slice(0, 6))).toBeUndefined();
  });

  it("truncates long tool results when serializing", () => {
    const text = serializeConversation([toolResult("x", "a".repeat(TOOL_RESULT_MAX_CHARS + 10))]);
    expect(text).toBe(
      `[Tool result]: ${"a".repeat(TOOL_RESULT_MAX_CHARS)}\n\n[... 10 more characters truncated]`,
    );
  });

  it("triggers when the context leaves less than the reserve", () => {
    expect(shouldCompact(100_000, 128_000, 16_384)).toBe(false);
    expect(shouldCompact(111_617, 128_000, 16_384)).toBe(true);
  });

  it("counts images and prefers the last valid usage", () => {
    const withImage: Message = {
      ...toolResult("x", ""),
      content: [{ type: "image", data: "", mimeType: "image/png" }],
    };
    expect(estimateTokens(withImage)).toBe(1200);
    const used = assistant([{ type: "text", text: "hi" }], {
      usage: {
        input: 900,
        output: 100,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 1000,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
    });
    const aborted = {
      ...used,
      stopReason: "aborted" as const,
      usage: { ...used.usage, totalTokens: 99_999 },
    };
    expect(estimateContextTokens([user("x"), used, aborted, user("abcdefgh")])).toEqual({
      tokens: 1000 + 1 + 2,
      usageTokens: 1000,
      trailingTokens: 3,
      lastUsageIndex: 1,
    });
  });

  it("property: a cut never separates a tool call from its result", () => {
    const turnArb = fc.record({
      userChars: fc.integer({ min: 0, max: 400 }),
      steps: fc.array(fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 2000 })), {
        maxLength: 4,
      }),
    });
    fc.assert(
      fc.property(
        fc.array(turnArb, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 6000 }),
        (turns, keep) => {
          const entries: SessionEntry[] = [];
          const push = (message: Message) =>
            entries.push(
              createMessageEntry(
                {
                  id: `e${entries.length}`,
                  parentId: entries.length ? `e${entries.length - 1}` : null,
                  timestamp: "2026-01-01T00:00:00.000Z",
                },
                message,
              ),
            );
          let n = 0;
          for (const turn of turns) {
            push(user("u".repeat(turn.userChars)));
            for (const [calls, chars] of turn.steps) {
              const ids = Array.from({ length: calls }, () => `c${n++}`);
              push(assistant(ids.map((id) => toolCall(id))));
              for (const id of ids) push(toolResult(id, "r".repeat(chars)));
            }
            push(assistant([{ type: "text", text: "done" }]));
          }
          const cut = findCutPoint(entries, 0, entries.length, keep);
          const kept = entries.slice(cut.firstKeptEntryIndex);
          const keptCalls = new Set(
            kept.flatMap((e) =>
              e.type === "message" && e.message.role === "assistant"
                ? e.message.content.flatMap((b) => (b.type === "toolCall" ? [b.id] : []))
                : [],
            ),
          );
          for (const e of kept) {
            if (e.type === "message" && e.message.role === "toolResult")
              expect(keptCalls.has(e.message.toolCallId)).toBe(true);
          }
          const summarized = entries.slice(0, cut.isSplitTurn ? cut.turnStartIndex : cut.firstKeptEntryIndex);
          for (const e of summarized) {
            if (e.type === "message" && e.message.role === "assistant") {
              for (const b of e.message.content)
                if (b.type === "toolCall") expect(keptCalls.has(b.id)).toBe(false);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("branch summary planning", () => {
  const entries = parseSession(readFixture(SESSION_FIXTURES, "branches-labels.jsonl")).entries;
  const { byId } = indexSession(entries);

  it("collects the entries from the old leaf back to the common ancestor", () => {
    const left = collectEntriesForBranchSummary(byId, "a000000c", "a0000014");
    expect(left.commonAncestorId).toBe("a0000006");
    expect(left.entries.map((e) => e.id)).toEqual([
      "a0000007",
      "a0000008",
      "a0000009",
      "a000000a",
      "a000000b",
      "a000000c",
    ]);
    expect(collectEntriesForBranchSummary(byId, null, "a0000014")).toEqual({
      entries: [],
      commonAncestorId: null,
    });
  });

  it("fits newest first into the budget and builds the request and the stored text", () => {
    const left = collectEntriesForBranchSummary(byId, "a000000c", "a0000014").entries;
    const all = prepareBranchEntries(left);
    expect(all.messages.map((m) => m.role)).toEqual(["user", "assistant", "assistant"]); // tool results left out
    const tight = prepareBranchEntries(left, estimateTokens(all.messages[2]!));
    expect(tight.messages).toEqual([all.messages[2]]);
    const request = buildBranchSummaryRequest(all, "only the risk")!;
    expect(request.prompt).toContain("[User]: Now delete tools.");
    expect(request.prompt.endsWith("Additional focus: only the risk")).toBe(true);
    expect(buildBranchSummaryRequest(prepareBranchEntries([]))).toBeUndefined();
    expect(composeBranchSummary("S", { readFiles: ["a"], modifiedFiles: [] })).toMatch(
      /S\n\n<read-files>\na\n<\/read-files>$/,
    );
  });
});
