/**
 * What a replay of a session from an entry forks and sends (docs/api.md, `POST …/replay`): from a
 * user message, a fork at its parent that is sent its text again; from any other entry, a fork at
 * that entry that is sent the given message, else the first user message after the entry on the
 * path to the session's leaf.
 */
import { pathToRoot, type SessionIndex } from "../core/session-tree";
import type { SessionEntry } from "../core/session-types";
import { textOf } from "../providers/transform";
import { ProblemError } from "./problems";

export interface ReplayPlan {
  /** The entry the forks end at; null: the forks hold no entries (a replay of the first message). */
  forkAt: string | null;
  /** The message each fork's run starts with. */
  question: string;
}

/** The text of a user message entry; undefined for any other entry. */
function userText(entry: SessionEntry): string | undefined {
  return entry.type === "message" && entry.message.role === "user"
    ? textOf(entry.message.content)
    : undefined;
}

/**
 * The plan for a replay from `fromEntryId` (with `message` when the request gives one). Throws
 * `entry-not-found` for an entry the session does not have and `no-replay-message` when there is
 * nothing to send.
 */
export function planReplay(
  index: Pick<SessionIndex, "byId" | "leafId">,
  fromEntryId: string,
  message?: string,
): ReplayPlan {
  const from = index.byId.get(fromEntryId);
  if (!from) throw new ProblemError("entry-not-found", `No entry ${JSON.stringify(fromEntryId)}.`);
  const asked = userText(from);
  if (asked !== undefined) {
    const question = message ?? asked;
    if (!question.trim())
      throw new ProblemError(
        "no-replay-message",
        `The user message ${fromEntryId} holds no text (images only): give \`message\`.`,
      );
    return { forkAt: from.parentId, question };
  }
  if (message !== undefined) return { forkAt: from.id, question: message };
  const onLeafPath = index.leafId === null ? [] : pathToRoot(index.byId, index.leafId);
  const at = onLeafPath.findIndex((entry) => entry.id === fromEntryId);
  const next =
    at < 0 ? undefined : onLeafPath.slice(at + 1).find((entry) => (userText(entry) ?? "").trim() !== "");
  if (!next)
    throw new ProblemError(
      "no-replay-message",
      at < 0
        ? `Entry ${fromEntryId} is not a user message and not on the path to the session's leaf: give \`message\`.`
        : `No user message follows entry ${fromEntryId} on the path to the session's leaf: give \`message\`.`,
    );
  return { forkAt: from.id, question: userText(next) as string };
}
