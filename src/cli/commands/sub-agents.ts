/**
 * `keel show`'s sub-agents: each `task` call of the session with its child run — the agent, the
 * child session (`keel show` it for the whole run), how it ended and what it cost, read from the
 * call's stored result (`details`), or the child session's status while the call runs.
 */

import type { ApiClient } from "../../api-client/client";
import { formatUsage } from "../render";
import { sessionDetails, type TaskCall } from "./session-details";

/** The lines `keel show` prints for the session's task calls (none when it made none). */
export async function subAgentLines(client: ApiClient, calls: TaskCall[]): Promise<string[]> {
  const lines = await Promise.all(
    calls.map(async (call) => `  ${call.agent}  ${call.child}  ${await outcome(client, call)}`),
  );
  return lines.length > 0 ? ["sub-agents", ...lines] : [];
}

async function outcome(client: ApiClient, call: TaskCall): Promise<string> {
  if (!call.result) {
    // Still running (or never started): the child session says where it is.
    const { status } = await sessionDetails(client, call.child);
    return status ?? "not started";
  }
  const { details, isError } = call.result;
  const status = details.cutShort
    ? "stopped before finishing"
    : (details.status ?? (isError ? "error" : "completed"));
  return details.usage ? `${status} · ${formatUsage(details.usage)}` : status;
}
