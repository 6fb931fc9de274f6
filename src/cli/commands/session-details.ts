/**
 * What `keel sessions` and `keel show` read of a session beyond its view: the prompt it started
 * with, its `task` calls, and what it cost, from the stored entries (one request per 1,000
 * entries). A session's cost is its own model calls (every stored assistant entry's usage, over
 * all its runs) plus its sub-agents' (each task call's stored usage): what the session cost its
 * tenant, as its run's budgets and usage count it (docs/tools.md, "task").
 */

import { type ApiClient, ApiError } from "../../api-client/client";
import { childSessionId, TASK_TOOL_NAME } from "../../core/agents";
import type { AgentMessage, Usage } from "../../core/messages";
import { addUsage, emptyUsage } from "../../core/usage";
import { formatUsd, oneLine, textOf } from "../render";
import { storedEntries } from "../session-entries";

const PROMPT_CHARS = 80;

/** What a `task` result's `details` holds (src/activities/task-result.ts). */
interface TaskDetails {
  agent?: string;
  childSessionId?: string;
  status?: string;
  cutShort?: boolean;
  /** The child's usage, its own sub-agents included. */
  usage?: Usage;
}

/** A `task` call of the session, with its stored result once there is one. */
export interface TaskCall {
  id: string;
  agent: string;
  /** The child session that runs (or ran) the call. */
  child: string;
  result?: { isError: boolean; details: TaskDetails };
}

/** What one read of a session's entries gives. */
interface StoredSession {
  /** The first user message's text, on one line and shortened. */
  firstPrompt?: string;
  /** Every stored assistant entry's usage, summed: the session's own model calls. */
  own: Usage;
  taskCalls: TaskCall[];
}

/** A session's cost: its own model calls, its sub-agents', and both together. */
interface SessionCost {
  own: Usage;
  subAgents: Usage;
  total: Usage;
}

export interface SessionDetails {
  /**
   * The latest run's status once it ended (completed, failed, aborted); the session's while one
   * is live (running, waiting_approval, paused); `no run` when the session never had one;
   * undefined when the view could not be read.
   */
  status?: string;
  /** The first user message's text, on one line and shortened. */
  firstPrompt?: string;
  /** Undefined when the entries could not be read. */
  cost?: SessionCost;
}

type EntryView = { type: string; message?: AgentMessage };

/** The session's details, as far as they can be read (a session that cannot be read still lists). */
export async function sessionDetails(client: ApiClient, sessionId: string): Promise<SessionDetails> {
  const [status, stored] = await Promise.all([
    statusOf(client, sessionId).catch(() => undefined),
    readStoredSession(client, sessionId)
      .then(async (read) => ({
        ...(read.firstPrompt !== undefined ? { firstPrompt: read.firstPrompt } : {}),
        cost: await costOf(client, read),
      }))
      .catch(() => ({})),
  ]);
  return { ...(status ? { status } : {}), ...stored };
}

async function statusOf(client: ApiClient, sessionId: string): Promise<string> {
  const view = await client.json(client.api.v1.sessions[":sessionId"].$get({ param: { sessionId } }));
  if (view.status !== "idle") return view.status;
  return view.run?.status ?? "no run";
}

/** Reads the session's entries once: its first prompt, its own usage and its task calls. */
export async function readStoredSession(client: ApiClient, sessionId: string): Promise<StoredSession> {
  let firstPrompt: string | undefined;
  let own = emptyUsage();
  const calls = new Map<string, TaskCall>();
  await forEachMessage(client, sessionId, (message) => {
    if (message.role === "user") firstPrompt ??= oneLine(textOf(message), PROMPT_CHARS);
    if (message.role === "assistant") {
      own = addUsage(own, message.usage);
      for (const block of message.content) {
        if (block.type !== "toolCall" || block.name !== TASK_TOOL_NAME) continue;
        const agent = typeof block.arguments.agent === "string" ? block.arguments.agent : "?";
        calls.set(block.id, { id: block.id, agent, child: childSessionId(sessionId, block.id) });
      }
    }
    const call = message.role === "toolResult" ? calls.get(message.toolCallId) : undefined;
    if (call && message.role === "toolResult") {
      const details = (
        typeof message.details === "object" && message.details !== null ? message.details : {}
      ) as TaskDetails;
      call.result = { isError: message.isError, details };
      if (details.childSessionId) call.child = details.childSessionId;
    }
  });
  return { ...(firstPrompt !== undefined ? { firstPrompt } : {}), own, taskCalls: [...calls.values()] };
}

/**
 * The session's cost: its own usage plus each task call's — the usage its result stored, or, for a
 * call without one (still running, or closed by an abort), the child session's own cost read the
 * same way (a child not started yet costs nothing).
 */
export async function costOf(client: ApiClient, stored: StoredSession): Promise<SessionCost> {
  const parts = await Promise.all(
    stored.taskCalls.map(async (call) => call.result?.details.usage ?? (await childCost(client, call.child))),
  );
  const subAgents = parts.reduce(addUsage, emptyUsage());
  return { own: stored.own, subAgents, total: addUsage(stored.own, subAgents) };
}

async function childCost(client: ApiClient, child: string): Promise<Usage> {
  try {
    return (await costOf(client, await readStoredSession(client, child))).total;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return emptyUsage();
    throw error;
  }
}

/** The cost as a person reads it: the total, and the part of it sub-agents spent when they did. */
export function formatCost(cost: SessionCost): string {
  if (cost.total.cost.unpriced) return "cost unknown";
  const children =
    cost.subAgents.totalTokens > 0 ? ` incl. sub-agents ${formatUsd(cost.subAgents.cost.total)}` : "";
  return `${formatUsd(cost.total.cost.total)}${children}`;
}

/** Calls `visit` with each stored message of the session, in order (one request per 1,000 entries). */
async function forEachMessage(
  client: ApiClient,
  sessionId: string,
  visit: (message: AgentMessage) => void,
): Promise<void> {
  for await (const { entry } of storedEntries(client, sessionId)) {
    const { type, message } = entry as EntryView;
    if (type === "message" && message) visit(message);
  }
}
