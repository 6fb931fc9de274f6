/**
 * The session viewer's data: pure functions that turn a session's header and entries into the
 * view model the page renders (`client.ts`). Everything here is plain text and numbers; the
 * browser turns it into DOM with `textContent` only, so nothing in a session (model output, tool
 * output, file names) is ever parsed as HTML.
 */
import { childSessionId, TASK_TOOL_NAME } from "../core/agents";
import type { AgentMessage, AssistantMessage, ToolResultMessage, Usage } from "../core/messages";
import { indexSession } from "../core/session-tree";
import type { SessionEntry, SessionHeader } from "../core/session-types";

/** One piece of an entry as the page shows it. */
export type ViewBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; text: string }
  /**
   * A tool call the model asked for; `args` is its arguments as indented JSON. A `task` call names
   * its sub-agent's session (`subSession`, derived from this session and the call id).
   */
  | { type: "tool_call"; id: string; name: string; args: string; subSession?: string }
  /** Output of a tool or a shell command; `error` when it failed. */
  | { type: "output"; text: string; error?: boolean }
  /** A unified diff (an edit's result). */
  | { type: "diff"; text: string }
  /** An image the message carried; its data is not shown (no data: URLs in the page). */
  | { type: "image"; mimeType: string }
  /** A compaction's or branch summary's text. */
  | { type: "summary"; text: string };

type ViewKind =
  | "user"
  | "assistant"
  | "tool_result"
  | "bash"
  | "compaction"
  | "branch_summary"
  | "custom"
  | "setting"
  | "label"
  | "info";

/** Token and cost figures of one model call. */
export interface ViewUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  /** Dollars; absent when the model has no known prices. */
  cost?: number;
}

export interface ViewNode {
  id: string;
  /** null for a root. */
  parentId: string | null;
  /** Children in file order. */
  children: string[];
  kind: ViewKind;
  /** One line naming the entry, e.g. `assistant · gpt-5 · toolUse`. */
  title: string;
  /** ISO 8601. */
  timestamp: string;
  blocks: ViewBlock[];
  /** The entry's current label. */
  label?: string;
  usage?: ViewUsage;
  /** Present on an assistant message that ended in an error. */
  error?: string;
  /** True for entries between the root and the leaf (the branch the session continues from). */
  onLeafPath: boolean;
}

export interface ViewModel {
  sessionId: string;
  createdAt?: string;
  cwd?: string;
  /** Session this one was forked from. */
  parentSession?: string;
  leafId: string | null;
  /** Every entry, in file order. */
  nodes: ViewNode[];
  /** Sums over every assistant message of the session (all branches). */
  totals: { modelCalls: number; toolCalls: number; usage: ViewUsage };
  /**
   * The session's runs in the Temporal UI (each model and tool call links there), when the
   * operator configured the UI's address.
   */
  temporalRunsUrl?: string;
}

export interface ViewOptions {
  /** The session's runs in the Temporal UI (see `temporalRunsUrl`). */
  temporalRunsUrl?: string;
}

/** The view model of a session. Entries must be in file order (as stored). */
export function buildViewModel(
  sessionId: string,
  header: SessionHeader | undefined,
  entries: readonly SessionEntry[],
  options: ViewOptions = {},
): ViewModel {
  const index = indexSession(entries);
  const onPath = new Set<string>();
  for (let id = index.leafId; id !== null && !onPath.has(id); ) {
    onPath.add(id);
    id = index.byId.get(id)?.parentId ?? null;
  }
  const totals = { modelCalls: 0, toolCalls: 0, usage: zeroUsage() };
  const nodes = entries.map((entry): ViewNode => {
    const node: ViewNode = {
      id: entry.id,
      parentId: entry.parentId !== null && index.byId.has(entry.parentId) ? entry.parentId : null,
      children: index.children.get(entry.id) ?? [],
      timestamp: entry.timestamp,
      onLeafPath: onPath.has(entry.id),
      ...describeEntry(entry),
    };
    for (const block of node.blocks)
      if (block.type === "tool_call" && block.name === TASK_TOOL_NAME && block.id)
        block.subSession = childSessionId(sessionId, block.id);
    const label = index.labels.get(entry.id);
    if (label !== undefined) node.label = label;
    if (node.kind === "assistant" && entry.type === "message" && entry.message.role === "assistant") {
      totals.modelCalls += 1;
      totals.toolCalls += node.blocks.filter((block) => block.type === "tool_call").length;
      addTo(totals.usage, entry.message.usage);
    }
    return node;
  });
  const model: ViewModel = { sessionId, leafId: index.leafId, nodes, totals };
  if (header?.timestamp !== undefined) model.createdAt = header.timestamp;
  if (header?.cwd !== undefined) model.cwd = header.cwd;
  if (header?.parentSession !== undefined) model.parentSession = header.parentSession;
  if (options.temporalRunsUrl !== undefined) model.temporalRunsUrl = options.temporalRunsUrl;
  return model;
}

type Described = Pick<ViewNode, "kind" | "title" | "blocks"> & Partial<Pick<ViewNode, "usage" | "error">>;

function describeEntry(entry: SessionEntry): Described {
  switch (entry.type) {
    case "message":
      return describeMessage(entry.message);
    case "compaction":
      return {
        kind: "compaction",
        title: `compaction · ${entry.tokensBefore} tokens before`,
        blocks: [{ type: "summary", text: entry.summary }],
      };
    case "branch_summary":
      return {
        kind: "branch_summary",
        title: `branch summary · left from ${entry.fromId}`,
        blocks: [{ type: "summary", text: entry.summary }],
      };
    case "model_change":
      return { kind: "setting", title: `model → ${entry.provider}/${entry.modelId}`, blocks: [] };
    case "thinking_level_change":
      return { kind: "setting", title: `thinking level → ${entry.thinkingLevel}`, blocks: [] };
    case "label":
      return {
        kind: "label",
        title: entry.label
          ? `label “${entry.label}” on ${entry.targetId}`
          : `label cleared on ${entry.targetId}`,
        blocks: [],
      };
    case "session_info":
      return { kind: "info", title: `session name → ${entry.name ?? "(none)"}`, blocks: [] };
    case "custom":
      return { kind: "custom", title: `custom · ${entry.customType}`, blocks: [] };
    case "custom_message":
      return {
        kind: "custom",
        title: `custom message · ${entry.customType}`,
        blocks: contentBlocks(entry.content),
      };
  }
}

function describeMessage(message: AgentMessage): Described {
  switch (message.role) {
    case "user":
      return { kind: "user", title: "user", blocks: contentBlocks(message.content) };
    case "assistant":
      return describeAssistant(message);
    case "toolResult":
      return describeToolResult(message);
    case "bashExecution": {
      const exit = message.cancelled ? "cancelled" : `exit ${message.exitCode ?? "?"}`;
      return {
        kind: "bash",
        title: `shell · ${exit}`,
        blocks: [
          { type: "tool_call", id: "", name: "bash", args: message.command },
          { type: "output", text: message.output, error: message.exitCode !== 0 },
        ],
      };
    }
    case "custom":
      return {
        kind: "custom",
        title: `custom · ${message.customType}`,
        blocks: contentBlocks(message.content),
      };
    case "branchSummary":
      return {
        kind: "branch_summary",
        title: "branch summary",
        blocks: [{ type: "summary", text: message.summary }],
      };
    case "compactionSummary":
      return {
        kind: "compaction",
        title: "compaction summary",
        blocks: [{ type: "summary", text: message.summary }],
      };
  }
}

function describeAssistant(message: AssistantMessage): Described {
  const blocks: ViewBlock[] = [];
  for (const block of message.content) {
    if (block.type === "text") blocks.push({ type: "text", text: block.text });
    else if (block.type === "thinking")
      blocks.push({ type: "thinking", text: block.redacted ? "(redacted by the provider)" : block.thinking });
    else
      blocks.push({ type: "tool_call", id: block.id, name: block.name, args: prettyJson(block.arguments) });
  }
  const described: Described = {
    kind: "assistant",
    title: `assistant · ${message.provider}/${message.model} · ${message.stopReason}`,
    blocks,
    usage: viewUsage(message.usage),
  };
  if (message.errorMessage !== undefined) described.error = message.errorMessage;
  return described;
}

function describeToolResult(message: ToolResultMessage): Described {
  const blocks: ViewBlock[] = [];
  for (const block of message.content) {
    if (block.type === "text") blocks.push({ type: "output", text: block.text, error: message.isError });
    else blocks.push({ type: "image", mimeType: block.mimeType });
  }
  const diff = diffOf(message.details);
  if (diff !== undefined) blocks.push({ type: "diff", text: diff });
  return {
    kind: "tool_result",
    title: `${message.toolName} result${message.isError ? " · error" : ""}`,
    blocks,
  };
}

/** The unified diff an edit's result carries in `details.diff`, if any. */
function diffOf(details: unknown): string | undefined {
  if (typeof details !== "object" || details === null || !("diff" in details)) return undefined;
  return typeof details.diff === "string" ? details.diff : undefined;
}

function contentBlocks(
  content: string | ReadonlyArray<{ type: string } & Record<string, unknown>>,
): ViewBlock[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return content.map(
    (block): ViewBlock =>
      block.type === "text" && typeof block.text === "string"
        ? { type: "text", text: block.text }
        : { type: "image", mimeType: typeof block.mimeType === "string" ? block.mimeType : "image" },
  );
}

function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? "";
}

function zeroUsage(): ViewUsage {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: 0 };
}

function viewUsage(usage: Usage): ViewUsage {
  const view: ViewUsage = {
    input: usage.input,
    output: usage.output,
    cacheRead: usage.cacheRead,
    cacheWrite: usage.cacheWrite,
    totalTokens: usage.totalTokens,
  };
  if (!usage.cost.unpriced) view.cost = usage.cost.total;
  return view;
}

function addTo(total: ViewUsage, usage: Usage): void {
  total.input += usage.input;
  total.output += usage.output;
  total.cacheRead += usage.cacheRead;
  total.cacheWrite += usage.cacheWrite;
  total.totalTokens += usage.totalTokens;
  if (!usage.cost.unpriced) total.cost = (total.cost ?? 0) + usage.cost.total;
}
