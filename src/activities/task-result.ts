/**
 * The `task` call's result: the child session's final answer in full (cut like other tool output,
 * at the output limits, with a notice naming the child session that keeps all of it), its usage
 * and its session id, written at the call's slot in the parent session. The answer is read here
 * from the child's session rather than passed through the workflow, so the parent's history
 * carries only a short summary however long the answer is.
 */

import type {
  ExecuteToolResult,
  MergeSubAgentWorkspaceResult,
  StoreTaskResultInput,
} from "../contracts/activities";
import { storeWriteFailures } from "../contracts/store-failures";
import { taskResultText } from "../core/agents";
import type { ToolResultMessage } from "../core/messages";
import { createMessageEntry } from "../core/session-entries";
import type { SessionEntry } from "../core/session-types";
import { summarize } from "../tool-calls/lifecycle";
import { notices, truncateHead } from "../tools/truncate";
import type { ActivityDeps } from "./deps";

/** The text of the last assistant message of `entries` that has any (the child's final answer). */
export function finalAnswer(entries: readonly SessionEntry[]): string {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i];
    if (entry?.type !== "message" || entry.message.role !== "assistant") continue;
    const text = entry.message.content
      .flatMap((block) => (block.type === "text" ? [block.text] : []))
      .join("\n")
      .trim();
    if (text) return text;
  }
  return "";
}

/**
 * The result message of a `task` call: the head of `answer` within the output limits (a notice
 * names the child session when it was cut), the child's status and usage; `details` carries the
 * child session id, status, usage and the truncation for clients.
 */
export function taskResultMessage(
  input: Omit<StoreTaskResultInput, "tenantId" | "sessionId" | "slot" | "readAnswer">,
  answer: string,
  timestamp: number,
): ToolResultMessage {
  const truncation = truncateHead(answer);
  const shown = truncation.truncated
    ? `${truncation.content}\n\n${notices.taskAnswer(truncation.outputLines, truncation.totalLines, input.child.sessionId)}`
    : answer;
  const merged = input.merge && mergeText(input.merge, input.child.sessionId);
  const isError = input.status !== "completed" || input.cutShort || input.merge?.outcome === "conflict";
  return {
    role: "toolResult",
    toolCallId: input.toolCallId,
    toolName: input.toolName,
    content: [
      {
        type: "text",
        text:
          taskResultText({
            agent: input.agent,
            sessionId: input.child.sessionId,
            status: input.cutShort ? "stopped before finishing" : input.status,
            reason: input.reason,
            answer: shown,
            usage: input.usage,
          }) + (merged ? `\n\n${merged}` : ""),
      },
    ],
    details: {
      agent: input.agent,
      childSessionId: input.child.sessionId,
      status: input.status,
      ...(input.cutShort ? { cutShort: true } : {}),
      usage: input.usage,
      ...(truncation.truncated ? { truncation } : {}),
      ...(input.merge && input.merge.outcome !== "unchanged" ? { merge: input.merge } : {}),
    },
    isError,
    timestamp,
  };
}

/** What the parent's model reads of the child's edits, after the answer. */
function mergeText(merge: MergeSubAgentWorkspaceResult, childSessionId: string): string | undefined {
  const list = (paths: string[], count: number) =>
    `${paths.join(", ")}${count > paths.length ? `, and ${count - paths.length} more` : ""}`;
  switch (merge.outcome) {
    case "unchanged":
      return undefined;
    case "applied":
      return `Its changes are in your workspace (${merge.count} ${merge.count === 1 ? "path" : "paths"}: ${list(merge.paths, merge.count)}).${merge.unrecorded ? ` They are not recorded (${merge.unrecorded}): a worker that takes the workspace over would not have them.` : ""}`;
    case "conflict":
      return `Its changes were NOT applied to your workspace: another call of the same batch changed ${list(merge.paths, merge.count)} meanwhile. They are in the workspace of session ${childSessionId}.`;
    case "unavailable":
      return `Its changes could not be applied to your workspace (${merge.reason}). They are in the workspace of session ${childSessionId}.`;
    case "separate":
      return `Any files it changed are NOT in your workspace: on environment ${merge.environment} a sub-agent works in a workspace of its own (session ${childSessionId}), which is not merged into yours. Make the changes yourself if you need them.`;
  }
}

export function taskResultActivity({ store }: ActivityDeps) {
  /** Writes the `task` call's result at its slot; a result already stored there is kept. */
  return async function storeTaskResult(input: StoreTaskResultInput): Promise<ExecuteToolResult> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const stored = await store.getEntry(ref, input.slot.seq);
    if (stored?.type === "message" && stored.message.role === "toolResult")
      return summarize(stored.message, "adopted");
    const answer = input.readAnswer
      ? finalAnswer(
          (await store.readEntries(input.child, { untilGap: true })).entries.map((item) => item.entry),
        )
      : "";
    const message = taskResultMessage(input, answer, Date.now());
    const entry = createMessageEntry(input.slot, message);
    // A different entry at the slot fails as a conflict; the same one (a retry's) is adopted.
    const { written } = await storeWriteFailures(() => store.putEntry(ref, input.slot.seq, entry));
    return summarize(message, written ? "executed" : "adopted");
  };
}
