/**
 * What `keel sessions` shows of each listed session beyond its id and times: where its latest
 * run stands (from the session view, which answers within a bound even when no worker does), the
 * prompt the session started with and what it cost, read from the stored entries (one request per
 * 1,000 entries): the same usage the turn lines and an export show.
 */

import type { ApiClient } from "../../api-client/client";
import type { AgentMessage, Usage } from "../../core/messages";
import { addUsage, emptyUsage } from "../../core/usage";
import { oneLine, textOf } from "../render";

const ENTRIES_PAGE_LIMIT = 1_000;
const PROMPT_CHARS = 80;

export interface SessionDetails {
  /**
   * The latest run's status once it ended (completed, failed, aborted); the session's while one
   * is live (running, waiting_approval); `no run` when the session never had one; undefined when
   * the view could not be read.
   */
  status?: string;
  /** The first user message's text, on one line and shortened. */
  firstPrompt?: string;
  /** Every stored assistant entry's usage, summed; undefined when the entries could not be read. */
  usage?: Usage;
}

type EntryView = { type: string; message?: AgentMessage };

/** The session's details, as far as they can be read (a session that cannot be read still lists). */
export async function sessionDetails(client: ApiClient, sessionId: string): Promise<SessionDetails> {
  const [status, stored] = await Promise.all([
    statusOf(client, sessionId).catch(() => undefined),
    promptAndUsage(client, sessionId).catch(() => ({})),
  ]);
  return { ...(status ? { status } : {}), ...stored };
}

async function statusOf(client: ApiClient, sessionId: string): Promise<string> {
  const view = await client.json(client.api.v1.sessions[":sessionId"].$get({ param: { sessionId } }));
  if (view.status !== "idle") return view.status;
  return view.run?.status ?? "no run";
}

async function promptAndUsage(
  client: ApiClient,
  sessionId: string,
): Promise<Pick<SessionDetails, "firstPrompt" | "usage">> {
  let firstPrompt: string | undefined;
  let usage = emptyUsage();
  await forEachMessage(client, sessionId, (message) => {
    if (message.role === "user") firstPrompt ??= oneLine(textOf(message), PROMPT_CHARS);
    if (message.role === "assistant") usage = addUsage(usage, message.usage);
  });
  return { ...(firstPrompt !== undefined ? { firstPrompt } : {}), usage };
}

/** Calls `visit` with each stored message of the session, in order (one request per 1,000 entries). */
export async function forEachMessage(
  client: ApiClient,
  sessionId: string,
  visit: (message: AgentMessage) => void,
): Promise<void> {
  let after: number | undefined;
  for (;;) {
    const page = await client.json(
      client.api.v1.sessions[":sessionId"].entries.$get({
        param: { sessionId },
        query: {
          limit: String(ENTRIES_PAGE_LIMIT),
          ...(after !== undefined ? { after: String(after) } : {}),
        },
      }),
    );
    for (const { seq, entry } of page.entries) {
      after = seq;
      const { type, message } = entry as EntryView;
      if (type === "message" && message) visit(message);
    }
    if (page.nextAfter === undefined || page.entries.length === 0) return;
  }
}
