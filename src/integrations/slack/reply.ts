/**
 * Replies into a Slack thread through Slack's Web API client. The run's final answer is posted
 * by a worker activity calling `postSlackReply` with the thread stored for the session
 * (`readSlackThread` in src/api/slack/threads.ts); the API itself posts only refusals (busy, queue full).
 */
import { WebClient } from "@slack/web-api";

export interface SlackReplyTarget {
  channel: string;
  threadTs: string;
  text: string;
}

export interface SlackClientSettings {
  /** Bot token (`xoxb-…`; KEEL_SLACK_BOT_TOKEN). */
  token?: string;
  /** Base URL of the Web API ending in `/` (KEEL_SLACK_API_URL); default Slack's own. */
  apiUrl?: string;
}

export type SlackReply = (reply: SlackReplyTarget) => Promise<void>;

/** Slack's limit for one message's text is 40,000 characters; longer answers are cut. */
const MAX_SLACK_TEXT_CHARS = 39_000;

/** Posts `text` into the thread. Throws the Web API's error when Slack refuses. */
export async function postSlackReply(reply: SlackReplyTarget, settings: SlackClientSettings): Promise<void> {
  const { token, apiUrl } = settings;
  const client = new WebClient(token, {
    ...(apiUrl ? { slackApiUrl: apiUrl } : {}),
    retryConfig: { retries: 2 },
  });
  const text =
    reply.text.length > MAX_SLACK_TEXT_CHARS ? `${reply.text.slice(0, MAX_SLACK_TEXT_CHARS)}…` : reply.text;
  await client.chat.postMessage({ channel: reply.channel, thread_ts: reply.threadTs, text });
}
