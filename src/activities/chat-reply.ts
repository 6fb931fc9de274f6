/**
 * Posts into the chat thread a run came from: its final answer, at most once per run, and each
 * pause at a budget (why, and how to go on from the thread), at most once per pause. A marker is
 * written before posting, so a retry after an unknown outcome does not post a second time (a lost
 * reply is better than a duplicate in a team's channel).
 */

import type { PostChatReplyInput, PostPauseNoticeInput } from "../contracts/activities";
import { pauseNoticeText } from "../integrations/slack/budget-commands";
import { postSlackReply } from "../integrations/slack/reply";
import type { ActivityDeps } from "./deps";

export function pauseNoticeActivity({ markers, slack = {} }: ActivityDeps) {
  return async function postPauseNotice(input: PostPauseNoticeInput): Promise<{ posted: boolean }> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const notice = `pause-${input.pause.since}`;
    if (!(await markers.markStarted(ref, { kind: "chatReply", runId: input.runId, notice }, 1)))
      return { posted: false };
    const { reason, message, until } = input.pause;
    await postSlackReply(
      {
        channel: input.target.channel,
        threadTs: input.target.threadTs,
        text: pauseNoticeText(reason, message, until),
      },
      slack,
    );
    return { posted: true };
  };
}

export function chatReplyActivity({ store, markers, slack = {} }: ActivityDeps) {
  return async function postChatReply(input: PostChatReplyInput): Promise<{ posted: boolean }> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    if (!(await markers.markStarted(ref, { kind: "chatReply", runId: input.runId }, 1)))
      return { posted: false };
    const { entries } = await store.readEntries(ref, { untilGap: true });
    const answer = entries
      .map((stored) => stored.entry)
      .findLast((entry) => entry.type === "message" && entry.message.role === "assistant");
    const answerText =
      answer?.type === "message" && answer.message.role === "assistant"
        ? answer.message.content
            .flatMap((block) => (block.type === "text" ? [block.text] : []))
            .join("\n")
            .trim()
        : "";
    const text =
      input.status === "completed"
        ? answerText || "(the run finished without a text answer)"
        : `The run ${input.status === "aborted" ? "was aborted" : "failed"}: ${input.reason}`;
    await postSlackReply({ channel: input.target.channel, threadTs: input.target.threadTs, text }, slack);
    return { posted: true };
  };
}
