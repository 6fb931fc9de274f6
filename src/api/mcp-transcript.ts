/**
 * A session's transcript as an MCP client's model reads it: the entries on the path from the root
 * to the leaf (the branch the session continues from), one line per entry with its text, tool
 * calls and outputs condensed, bounded to `maxChars`. Built from the viewer's data
 * (`GET /v1/sessions/{id}/view`, src/viewer/view-model.ts), so it shows what the viewer shows.
 * When the bound is reached the oldest entries after the first (the task) are left out, and the
 * text says how many.
 */
import type { ViewBlock, ViewModel, ViewNode } from "../viewer/view-model";

/** Characters kept of one block of each kind (the rest is cut with an ellipsis). */
const BLOCK_CHARS: Record<ViewBlock["type"], number> = {
  text: 4_000,
  thinking: 300,
  tool_call: 500,
  output: 800,
  diff: 2_000,
  image: 100,
  summary: 1_000,
};

export interface TranscriptSummary {
  text: string;
  /** Entries on the leaf's path, and how many of them the text shows. */
  entries: number;
  shownEntries: number;
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

function blockLine(block: ViewBlock): string {
  const max = BLOCK_CHARS[block.type];
  switch (block.type) {
    case "tool_call":
      return `  → ${block.name} ${cut(block.args.replace(/\s*\n\s*/g, " "), max)}`;
    case "output":
      return `  ← ${block.error ? "(error) " : ""}${cut(block.text, max)}`;
    case "image":
      return `  [image ${block.mimeType}]`;
    case "thinking":
      return `  (thinking) ${cut(block.text, max)}`;
    default:
      return `  ${cut(block.text, max)}`;
  }
}

function nodeText(node: ViewNode): string {
  const head = `[${node.kind}] ${node.title}${node.error ? ` — error: ${node.error}` : ""}`;
  return [head, ...node.blocks.map(blockLine)].join("\n");
}

/** The condensed transcript of a view model, at most `maxChars` long (see the module's contract). */
export function transcriptSummary(
  view: ViewModel & { status?: string },
  maxChars: number,
): TranscriptSummary {
  const path = view.nodes.filter((node) => node.onLeafPath);
  const { modelCalls, toolCalls, usage } = view.totals;
  const heading = `Session ${view.sessionId} (${view.status ?? "unknown"}): ${path.length} entries on its branch, ${modelCalls} model calls, ${toolCalls} tool calls, ${usage.totalTokens} tokens${usage.cost !== undefined ? `, $${usage.cost.toFixed(4)}` : ""}.`;
  const parts = path.map(nodeText);
  let budget = maxChars - heading.length - 80;
  // The first entry (the task) and then the newest ones, as many as the bound allows.
  const kept: string[] = [];
  const first = parts[0] !== undefined ? cut(parts[0], Math.max(0, Math.floor(budget / 4))) : undefined;
  if (first !== undefined) budget -= first.length + 2;
  for (let index = parts.length - 1; index >= 1; index -= 1) {
    const part = parts[index] as string;
    if (part.length + 2 > budget) break;
    kept.unshift(part);
    budget -= part.length + 2;
  }
  const omitted = Math.max(0, parts.length - 1 - kept.length);
  const body = [
    ...(first !== undefined ? [first] : []),
    ...(omitted > 0 ? [`… ${omitted} earlier entries left out (maxChars) …`] : []),
    ...kept,
  ];
  return {
    text: [heading, ...body].join("\n\n").slice(0, maxChars),
    entries: path.length,
    shownEntries: (first !== undefined ? 1 : 0) + kept.length,
  };
}
