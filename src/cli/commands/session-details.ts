/**
 * What `keel sessions` shows of each listed session beyond its id and times: the prompt it
 * started with, how its last turn ended and what it cost. Read from the stored entries (one
 * request per 1,000 entries), the same usage the turn lines and an export show; no Temporal call,
 * so a session whose worker is gone lists as fast as any other.
 */
import { ABORTED_TOOL_RESULT_TEXT, UNFINISHED_TOOL_RESULT_TEXT } from "../../core/markers";
import type { AgentMessage, Usage } from "../../core/messages";
import { addUsage, emptyUsage } from "../../core/usage";
import type { ApiClient } from "../client";
import { oneLine, textOf } from "../render";

const ENTRIES_PAGE_LIMIT = 1_000;
const PROMPT_CHARS = 80;

/** How the session's last turn stands, as the stored entries tell it. */
export type LastTurn = "completed" | "failed" | "aborted" | "in progress" | "empty";

export interface SessionDetails {
  /** The first user message's text, on one line and shortened. */
  firstPrompt?: string;
  lastTurn: LastTurn;
  /** Every assistant entry's usage, summed. */
  usage: Usage;
}

type EntryView = { type: string; message?: AgentMessage };

/** The session's details; undefined when its entries cannot be read (the list still shows it). */
export async function sessionDetails(
  client: ApiClient,
  sessionId: string,
): Promise<SessionDetails | undefined> {
  const details: SessionDetails = { lastTurn: "empty", usage: emptyUsage() };
  let after: number | undefined;
  try {
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
        const message = (entry as EntryView).type === "message" ? (entry as EntryView).message : undefined;
        if (message) note(details, message);
      }
      if (page.nextAfter === undefined || page.entries.length === 0) return details;
    }
  } catch {
    return undefined;
  }
}

function note(details: SessionDetails, message: AgentMessage): void {
  if (message.role === "user") {
    details.firstPrompt ??= oneLine(textOf(message), PROMPT_CHARS);
    details.lastTurn = "in progress";
  } else if (message.role === "assistant") {
    details.usage = addUsage(details.usage, message.usage);
    details.lastTurn =
      message.stopReason === "error"
        ? "failed"
        : message.stopReason === "aborted"
          ? "aborted"
          : message.stopReason === "toolUse"
            ? "in progress"
            : "completed";
  } else if (message.role === "toolResult") {
    // A run that ended while a tool ran closed the call with one of these texts.
    const text = message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    details.lastTurn =
      text === ABORTED_TOOL_RESULT_TEXT
        ? "aborted"
        : text === UNFINISHED_TOOL_RESULT_TEXT
          ? "failed"
          : "in progress";
  }
}
