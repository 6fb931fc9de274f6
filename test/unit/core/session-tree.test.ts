import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AgentMessage, convertToLlm } from "../../../src/core/messages";
import { parseSession, serializeSession } from "../../../src/core/session-codec";
import {
  createCompactionEntry,
  createCustomMessageEntry,
  createMessageEntry,
  createSessionHeader,
} from "../../../src/core/session-entries";
import { buildContext, commonAncestor, indexSession, pathToRoot } from "../../../src/core/session-tree";
import type { SessionContext, SessionEntry } from "../../../src/core/session-types";
import {
  asJson,
  assistant,
  PI_FIXTURES,
  readFixture,
  runPiHelper,
  SESSION_FIXTURES,
  textOf,
  user,
} from "./helpers";

interface PiContextOutput {
  context: SessionContext;
  llm: unknown[];
  managerContext: SessionContext;
  managerLeafId: string | null;
  entryCount: number;
}

function load(dir: string, name: string): SessionEntry[] {
  const parsed = parseSession(readFixture(dir, name));
  expect(parsed.errors).toEqual([]);
  return parsed.entries;
}

describe("indexSession", () => {
  const entries = load(SESSION_FIXTURES, "branches-labels.jsonl");
  const index = indexSession(entries);

  it("finds children, the leaf (last entry), branch points and current labels", () => {
    expect(index.leafId).toBe("a0000016");
    expect(index.children.get("a0000006")).toEqual(["a0000007", "a000000d"]);
    expect(index.children.get(null)).toEqual(["a0000001"]);
    expect(index.branchPoints).toEqual(["a0000006"]);
    // "risky" on a0000008 was cleared by a later label entry without text.
    expect([...index.labels]).toEqual([["a0000006", "listed"]]);
  });

  it("walks the path to the root, root first", () => {
    expect(pathToRoot(index.byId, "a0000005").map((e) => e.id)).toEqual([
      "a0000001",
      "a0000002",
      "a0000003",
      "a0000004",
      "a0000005",
    ]);
    expect(pathToRoot(index.byId, "nope")).toEqual([]);
    expect(commonAncestor(index.byId, "a000000b", "a0000014")).toBe("a0000006");
  });

  it("stops at a parent cycle instead of looping", () => {
    const a = { type: "session_info", id: "a", parentId: "b", timestamp: "t" } as const;
    const b = { type: "session_info", id: "b", parentId: "a", timestamp: "t" } as const;
    expect(pathToRoot(indexSession([a, b]).byId, "a").map((e) => e.id)).toEqual(["b", "a"]);
  });
});

describe("buildContext", () => {
  it("follows the leaf's branch only, with branch summary and custom message as context", () => {
    const entries = load(SESSION_FIXTURES, "branches-labels.jsonl");
    const context = buildContext(entries);
    expect(context.model).toEqual({ provider: "openai", modelId: "gpt-5.1" });
    expect(context.thinkingLevel).toBe("medium");
    expect(context.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
      "branchSummary",
      "custom",
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);
    const abandoned = buildContext(entries, "a000000b");
    expect(abandoned.messages.map(textOf)).toContain("Deleted.");
    expect(abandoned.model).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
  });

  it("applies only the latest compaction: summary, kept entries, then the rest", () => {
    const context = buildContext(load(SESSION_FIXTURES, "two-compactions.jsonl"));
    expect(context.messages[0]).toMatchObject({ role: "compactionSummary", tokensBefore: 61000 });
    expect(context.messages.slice(1).map(textOf)).toEqual([
      "Turn 5: edit file5.ts",
      "",
      "ok",
      "file5.ts edited.",
      "Turn 6: summarize.",
      "Done: read 1-3, edited 4-5.",
    ]);
  });

  it("keeps a split turn from the kept assistant message on", () => {
    const context = buildContext(load(SESSION_FIXTURES, "split-turn.jsonl"));
    expect(context.messages.map((m) => m.role)).toEqual([
      "compactionSummary",
      "assistant",
      "toolResult",
      "assistant",
    ]);
  });

  it("returns nothing for a null leaf and falls back to the last entry for an unknown one", () => {
    const entries = load(SESSION_FIXTURES, "split-turn.jsonl");
    expect(buildContext(entries, null)).toEqual({ messages: [], thinkingLevel: "off", model: null });
    expect(buildContext(entries, "missing")).toEqual(buildContext(entries));
    expect(buildContext([])).toEqual({ messages: [], thinkingLevel: "off", model: null });
  });
});

describe("compatibility with pi's own loader", () => {
  /** pi keeps legacy usage without totalTokens; Keel fills it in (documented in the codec). */
  function withTotalTokens(messages: AgentMessage[]): AgentMessage[] {
    return messages.map((m) => {
      if (m.role !== "assistant" || m.usage.totalTokens !== undefined) return m;
      const u = m.usage;
      return { ...m, usage: { ...u, totalTokens: u.input + u.output + u.cacheRead + u.cacheWrite } };
    });
  }

  function expectSameAsPi(file: string, entries: SessionEntry[], leafId?: string) {
    const pi = runPiHelper<PiContextOutput>("pi-context.mjs", leafId ? [file, leafId] : [file]);
    const keel = buildContext(entries, leafId);
    expect(pi.entryCount).toBe(entries.length);
    expect(asJson(keel.messages)).toEqual(withTotalTokens(pi.context.messages));
    expect(keel.model).toEqual(pi.context.model);
    expect(keel.thinkingLevel).toBe(pi.context.thinkingLevel);
    expect(asJson(convertToLlm(keel.messages))).toEqual(withTotalTokens(pi.llm as AgentMessage[]));
    if (!leafId) expect(asJson(keel.messages)).toEqual(withTotalTokens(pi.managerContext.messages));
    return keel;
  }

  it.each([
    [PI_FIXTURES, "before-compaction.jsonl"],
    [PI_FIXTURES, "large-session.jsonl"],
    [SESSION_FIXTURES, "branches-labels.jsonl"],
    [SESSION_FIXTURES, "two-compactions.jsonl"],
    [SESSION_FIXTURES, "split-turn.jsonl"],
    [SESSION_FIXTURES, "v1-linear.jsonl"],
    [SESSION_FIXTURES, "v2-hook-message.jsonl"],
  ])("%s/%s yields pi's context", (dir, name) => {
    const keel = expectSameAsPi(join(dir, name), load(dir, name));
    expect(keel.messages.length).toBeGreaterThan(0);
  });

  it("matches pi on an abandoned branch leaf", () => {
    expectSameAsPi(
      join(SESSION_FIXTURES, "branches-labels.jsonl"),
      load(SESSION_FIXTURES, "branches-labels.jsonl"),
      "a000000b",
    );
  });

  it("writes files pi opens with the same context", () => {
    const at = (id: string, parentId: string | null, second: number) => ({
      id,
      parentId,
      timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString(),
    });
    const entries: SessionEntry[] = [
      createMessageEntry(at("k1", null, 1), user("Hello")),
      createMessageEntry(at("k2", "k1", 2), assistant([{ type: "text", text: "Hi." }])),
      createCustomMessageEntry(at("k3", "k2", 3), "note", "Remember the tests.", false, { n: 1 }),
      createMessageEntry(at("k4", "k3", 4), user("Run them")),
      createCompactionEntry(at("k5", "k4", 5), "Greeted.", "k3", 500, { readFiles: [], modifiedFiles: [] }),
      createMessageEntry(at("k6", "k5", 6), assistant([{ type: "text", text: "Running." }])),
    ];
    const dir = mkdtempSync(join(tmpdir(), "keel-session-"));
    try {
      const file = join(dir, "keel.jsonl");
      const header = createSessionHeader("keel-session", "2026-01-01T00:00:00.000Z", "/work");
      writeFileSync(file, serializeSession({ header, entries }));
      const pi = runPiHelper<PiContextOutput>("pi-context.mjs", [file]);
      expect(pi.managerLeafId).toBe("k6");
      expect(asJson(buildContext(entries).messages)).toEqual(pi.managerContext.messages);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("parses files pi writes, byte-stable, with pi's context", () => {
    const dir = mkdtempSync(join(tmpdir(), "pi-session-"));
    try {
      const pi = runPiHelper<{ file: string; leafId: string; context: SessionContext }>("pi-write.mjs", [
        dir,
      ]);
      const text = readFileSync(pi.file, "utf8");
      const parsed = parseSession(text);
      expect(parsed.errors).toEqual([]);
      expect(serializeSession({ header: parsed.header!, entries: parsed.entries })).toBe(text);
      const index = indexSession(parsed.entries);
      expect(index.leafId).toBe(pi.leafId);
      expect(index.branchPoints).toHaveLength(1);
      expect([...index.labels.values()]).toEqual(["start"]);
      const keel = buildContext(parsed.entries);
      expect(asJson(keel)).toEqual(pi.context);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
