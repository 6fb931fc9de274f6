/** The transcript an MCP client reads: the leaf's branch only, condensed, and never over its bound. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { transcriptSummary } from "../../../src/api/mcp-transcript";
import { parseSession } from "../../../src/core/session-codec";
import type { SessionEntry } from "../../../src/core/session-types";
import { buildViewModel } from "../../../src/viewer/view-model";

const parsed = parseSession(
  readFileSync(join(__dirname, "../../fixtures/sessions/branches-labels.jsonl"), "utf8"),
);
const view = { ...buildViewModel("s1", parsed.header ?? undefined, parsed.entries), status: "idle" };

test("the branch to the leaf, with tool calls and their outputs condensed; abandoned branches left out", () => {
  const summary = transcriptSummary(view, 100_000);
  const onPath = view.nodes.filter((node) => node.onLeafPath);
  expect(summary.entries).toBe(onPath.length);
  expect(summary.shownEntries).toBe(onPath.length);
  expect(summary.text).toMatch(/^Session s1 \(idle\): /);
  expect(summary.text).toMatch(/→ ls /);
  const textsOf = (nodes: typeof view.nodes) =>
    nodes.flatMap((node) => node.blocks.flatMap((block) => ("text" in block ? [block.text] : [])));
  const onPathTexts = new Set(textsOf(onPath));
  const abandoned = textsOf(view.nodes.filter((node) => !node.onLeafPath)).filter(
    (text) => text.trim() !== "" && !onPathTexts.has(text),
  );
  expect(abandoned.length).toBeGreaterThan(0);
  for (const text of abandoned) expect(summary.text).not.toContain(text);
});

test("over the bound: the task and the newest entries kept, the count of those left out said, the bound held", () => {
  const long = (
    id: string,
    parentId: string | null,
    role: "user" | "assistant",
    text: string,
  ): SessionEntry =>
    ({
      type: "message",
      id,
      parentId,
      timestamp: "2026-01-05T10:00:00.000Z",
      message:
        role === "user"
          ? { role, content: [{ type: "text", text }], timestamp: 0 }
          : {
              role,
              content: [{ type: "text", text }],
              api: "openai-completions",
              provider: "openai",
              model: "m",
              usage: {
                input: 0,
                output: 0,
                cacheRead: 0,
                cacheWrite: 0,
                totalTokens: 0,
                cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
              },
              stopReason: "stop",
              timestamp: 0,
            },
    }) as SessionEntry;
  const entries = Array.from({ length: 200 }, (_, index) =>
    long(
      `e${index}`,
      index === 0 ? null : `e${index - 1}`,
      index % 2 === 0 ? "user" : "assistant",
      `turn ${index} ${"x".repeat(500)}`,
    ),
  );
  const big = buildViewModel("s2", undefined, entries);
  for (const maxChars of [1_000, 5_000, 20_000]) {
    const summary = transcriptSummary(big, maxChars);
    expect(summary.text.length).toBeLessThanOrEqual(maxChars);
    expect(summary.text).toContain("turn 0 ");
    expect(summary.text).toContain("turn 199 ");
    expect(summary.text).toContain(`… ${200 - summary.shownEntries} earlier entries left out (maxChars) …`);
    expect(summary.shownEntries).toBeLessThan(200);
  }
});
