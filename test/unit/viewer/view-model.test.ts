import { readFileSync } from "node:fs";
import { join } from "node:path";
import { childSessionId } from "../../../src/core/agents";
import { parseSession } from "../../../src/core/session-codec";
import type { SessionEntry } from "../../../src/core/session-types";
import { temporalRunsUrl, viewerLinkMarkdown } from "../../../src/viewer/links";
import { CLIENT_SCRIPT, cspHash, exportPage, jsonInHtml, livePage } from "../../../src/viewer/page";
import { buildViewModel, type ViewModel } from "../../../src/viewer/view-model";

const fixtures = join(__dirname, "../../fixtures");

function load(file: string) {
  const parsed = parseSession(readFileSync(join(fixtures, file), "utf8"));
  return { header: parsed.header ?? undefined, entries: parsed.entries };
}

function node(model: ViewModel, id: string) {
  const found = model.nodes.find((candidate) => candidate.id === id);
  if (!found) throw new Error(`no node ${id}`);
  return found;
}

describe("buildViewModel", () => {
  const { header, entries } = load("sessions/branches-labels.jsonl");
  const model = buildViewModel("s1", header, entries);

  test("keeps the tree: children, branch points and the path to the leaf", () => {
    expect(model.leafId).toBe("a0000016");
    // a0000006 is where the session branched: the abandoned turn and the branch summary.
    expect(node(model, "a0000006").children).toEqual(["a0000007", "a000000d"]);
    expect(node(model, "a0000006").onLeafPath).toBe(true);
    expect(node(model, "a000000d").onLeafPath).toBe(true);
    expect(node(model, "a0000009").onLeafPath).toBe(false);
    expect(node(model, "a0000001").parentId).toBeNull();
  });

  test("shows labels as they stand at the end (a cleared label is gone)", () => {
    expect(node(model, "a0000006").label).toBe("listed");
    // "risky" was set on a0000008 and cleared later.
    expect(node(model, "a0000008").label).toBeUndefined();
  });

  test("describes each kind of entry with its blocks", () => {
    const assistant = node(model, "a0000004");
    expect(assistant.kind).toBe("assistant");
    expect(assistant.blocks).toEqual([
      { type: "text", text: "Listing." },
      { type: "tool_call", id: "call_ls", name: "ls", args: JSON.stringify({ path: "src" }, null, 2) },
    ]);
    expect(assistant.usage?.totalTokens).toBeGreaterThan(0);
    expect(node(model, "a0000005")).toMatchObject({
      kind: "tool_result",
      blocks: [{ type: "output", text: "core\ntools", error: false }],
    });
    expect(node(model, "a000000d")).toMatchObject({
      kind: "branch_summary",
      blocks: [{ type: "summary", text: "The user asked to delete src/tools; it was deleted." }],
    });
    expect(node(model, "a0000010").title).toBe("model → openai/gpt-5.1");
    expect(node(model, "a000000f").blocks).toEqual([
      { type: "text", text: "Never delete directories without asking." },
    ]);
  });

  test("sums the usage of every model call, all branches", () => {
    const calls = model.nodes.filter((candidate) => candidate.kind === "assistant");
    expect(model.totals.modelCalls).toBe(calls.length);
    expect(model.totals.toolCalls).toBe(3);
    expect(model.totals.usage.totalTokens).toBe(
      calls.reduce((sum, candidate) => sum + (candidate.usage?.totalTokens ?? 0), 0),
    );
  });

  test("shows an edit's diff, thinking, and a compaction where it happened", () => {
    const base = { parentId: null, timestamp: "2026-01-01T00:00:00.000Z" };
    const usage = {
      input: 1,
      output: 2,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 3,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0, unpriced: true as const },
    };
    const made: SessionEntry[] = [
      {
        type: "message",
        id: "m1",
        ...base,
        message: {
          role: "assistant",
          content: [{ type: "thinking", thinking: "plan" }],
          api: "x",
          provider: "p",
          model: "m",
          usage,
          stopReason: "toolUse",
          timestamp: 0,
        },
      },
      {
        type: "message",
        id: "m2",
        ...base,
        parentId: "m1",
        message: {
          role: "toolResult",
          toolCallId: "c1",
          toolName: "edit",
          content: [{ type: "text", text: "ok" }],
          details: { diff: "--- a\n+++ b\n-x\n+y" },
          isError: false,
          timestamp: 0,
        },
      },
      {
        type: "compaction",
        id: "m3",
        ...base,
        parentId: "m2",
        summary: "so far",
        firstKeptEntryId: "m2",
        tokensBefore: 9,
      },
    ];
    const view = buildViewModel("s2", undefined, made);
    expect(node(view, "m1").blocks).toEqual([{ type: "thinking", text: "plan" }]);
    // Unpriced: no cost shown as $0.
    expect(node(view, "m1").usage?.cost).toBeUndefined();
    expect(node(view, "m2").blocks).toContainEqual({ type: "diff", text: "--- a\n+++ b\n-x\n+y" });
    expect(node(view, "m3")).toMatchObject({
      kind: "compaction",
      blocks: [{ type: "summary", text: "so far" }],
    });
  });

  test("reads pi's own session files (version 1, migrated)", () => {
    const pi = load("pi-sessions/before-compaction.jsonl");
    const view = buildViewModel("pi", pi.header, pi.entries);
    expect(view.nodes).toHaveLength(pi.entries.length);
    expect(view.nodes.filter((candidate) => candidate.kind === "compaction").length).toBeGreaterThanOrEqual(
      2,
    );
    expect(view.nodes.some((candidate) => candidate.kind === "bash")).toBe(true);
  });
});

test("temporalRunsUrl lists the session's workflow runs", () => {
  expect(temporalRunsUrl("http://ui:8233/", "default", "keel-run/t/s")).toBe(
    "http://ui:8233/namespaces/default/workflows?query=WorkflowId%3D%22keel-run%2Ft%2Fs%22",
  );
});

describe("the pages", () => {
  test("jsonInHtml cannot close the script element it sits in and reads back unchanged", () => {
    const hostile = { text: "</script><script>alert(1)</script><!-- & \u2028" };
    const encoded = jsonInHtml(hostile);
    expect(encoded).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(encoded)).toEqual(hostile);
  });

  test("the export embeds the session as data only, and allows exactly its own script", () => {
    const hostile: ViewModel = {
      sessionId: "s",
      leafId: "e",
      nodes: [
        {
          id: "e",
          parentId: null,
          children: [],
          kind: "tool_result",
          title: "bash result",
          timestamp: "t",
          blocks: [
            { type: "output", text: "</script><script>window.pwned=1</script><img src=x onerror=alert(1)>" },
          ],
          onLeafPath: true,
        },
      ],
      totals: {
        modelCalls: 0,
        toolCalls: 0,
        usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 },
      },
    };
    const { html, contentSecurityPolicy } = exportPage(hostile);
    // One executable script element, the page's own; the session is JSON data only.
    expect(html.match(/<script>/g)).toHaveLength(1);
    expect(html).not.toContain("<img");
    expect(html).toContain(`<script>${CLIENT_SCRIPT}</script>`);
    expect(contentSecurityPolicy).toContain(`script-src ${cspHash(CLIENT_SCRIPT)}`);
    expect(contentSecurityPolicy).toContain("connect-src 'none'");
    expect(contentSecurityPolicy).toContain("default-src 'none'");
  });

  test("the live page holds no session data and may fetch from its own origin only", () => {
    const { html, contentSecurityPolicy } = livePage("abc");
    expect(html).not.toContain('id="keel-view"');
    expect(contentSecurityPolicy).toContain("connect-src 'self'");
    expect(contentSecurityPolicy).toContain("frame-ancestors 'none'");
  });

  test("the client script is one self-contained program", () => {
    expect(() => new Function(CLIENT_SCRIPT)).not.toThrow();
    expect(CLIENT_SCRIPT).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
  });
});

test("viewerLinkMarkdown links a run to its session's viewer page", () => {
  expect(viewerLinkMarkdown("http://127.0.0.1:8787/", "s 1")).toBe(
    "[Transcript of session s 1](http://127.0.0.1:8787/view/sessions/s%201)",
  );
});

test("a task call names its sub-agent's session (the sub-run the page links to)", () => {
  const entries: SessionEntry[] = [
    {
      type: "message",
      id: "e1",
      parentId: null,
      timestamp: "2026-01-01T00:00:00.000Z",
      message: {
        role: "assistant",
        content: [
          {
            type: "toolCall",
            id: "call_task",
            name: "task",
            arguments: { agent: "explore", prompt: "look" },
          },
          { type: "toolCall", id: "call_ls", name: "ls", arguments: {} },
        ],
        api: "x",
        provider: "x",
        model: "x",
        usage: {
          input: 0,
          output: 0,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 0,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
        },
        stopReason: "toolUse",
        timestamp: 1,
      },
    },
  ];
  const [task, ls] = node(buildViewModel("parent", undefined, entries), "e1").blocks;
  expect(task).toMatchObject({
    type: "tool_call",
    name: "task",
    subSession: childSessionId("parent", "call_task"),
  });
  expect(ls).not.toHaveProperty("subSession");
});
