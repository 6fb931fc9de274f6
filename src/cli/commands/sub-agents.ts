/**
 * `keel show`'s sub-agents: each `task` call of the session with its child run — the agent, the
 * child session (`keel show` it for the whole run), how it ended and what it cost, read from the
 * call's stored result (`details`), or the child session's status while the call runs.
 */

import type { ApiClient } from "../../api-client/client";
import { childSessionId, TASK_TOOL_NAME } from "../../core/agents";
import type { Usage } from "../../core/messages";
import { formatUsage } from "../render";
import { forEachMessage, sessionDetails } from "./session-details";

/** What a `task` result's `details` holds (src/activities/task-result.ts). */
interface TaskDetails {
  agent?: string;
  childSessionId?: string;
  status?: string;
  cutShort?: boolean;
  usage?: Usage;
}

interface TaskCall {
  id: string;
  agent: string;
  result?: { isError: boolean; details: TaskDetails };
}

/** The lines `keel show` prints for the session's task calls (none when it made none). */
export async function subAgentLines(client: ApiClient, sessionId: string): Promise<string[]> {
  const calls = new Map<string, TaskCall>();
  await forEachMessage(client, sessionId, (message) => {
    if (message.role === "assistant") {
      for (const block of message.content) {
        if (block.type !== "toolCall" || block.name !== TASK_TOOL_NAME) continue;
        const agent = typeof block.arguments.agent === "string" ? block.arguments.agent : "?";
        calls.set(block.id, { id: block.id, agent });
      }
    }
    const call = message.role === "toolResult" ? calls.get(message.toolCallId) : undefined;
    if (call && message.role === "toolResult") {
      const details = typeof message.details === "object" && message.details !== null ? message.details : {};
      call.result = { isError: message.isError, details: details as TaskDetails };
    }
  });
  const lines = await Promise.all(
    [...calls.values()].map(async (call) => {
      const child = call.result?.details.childSessionId ?? childSessionId(sessionId, call.id);
      return `  ${call.agent}  ${child}  ${await outcome(client, child, call)}`;
    }),
  );
  return lines.length > 0 ? ["sub-agents", ...lines] : [];
}

async function outcome(client: ApiClient, child: string, call: TaskCall): Promise<string> {
  if (!call.result) {
    // Still running (or never started): the child session says where it is.
    const { status } = await sessionDetails(client, child);
    return status ?? "not started";
  }
  const { details, isError } = call.result;
  const status = details.cutShort
    ? "stopped before finishing"
    : (details.status ?? (isError ? "error" : "completed"));
  return details.usage ? `${status} · ${formatUsage(details.usage)}` : status;
}
