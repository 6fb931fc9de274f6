/**
 * The anti-pattern Keel avoids, for the history benchmark only: the workflow keeps the whole
 * conversation and passes it to the model activity every turn, so each turn's activity input is
 * as large as the session so far and the history grows quadratically with its length.
 */
import { proxyActivities } from "@temporalio/workflow";

/** A message as the model activity returns it: only the tool calls are looked at here. */
export interface NaiveMessage {
  role: string;
  content?: unknown;
}

export interface NaiveToolCall {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface NaiveActivities {
  /** Answers the conversation so far (all of it, in the input). */
  naiveModel(messages: NaiveMessage[]): Promise<NaiveMessage>;
  /** Runs one tool call and returns its toolResult message. */
  naiveTool(call: NaiveToolCall): Promise<NaiveMessage>;
}

const { naiveModel, naiveTool } = proxyActivities<NaiveActivities>({ startToCloseTimeout: "1 minute" });

function toolCallsOf(message: NaiveMessage): NaiveToolCall[] {
  if (!Array.isArray(message.content)) return [];
  return message.content.filter(
    (block): block is NaiveToolCall => (block as { type?: unknown }).type === "toolCall",
  );
}

/** Model → tools → model … until an answer without tool calls; returns the message count. */
export async function naiveRun(prompt: NaiveMessage): Promise<number> {
  const messages: NaiveMessage[] = [prompt];
  for (;;) {
    const answer = await naiveModel(messages);
    messages.push(answer);
    const calls = toolCallsOf(answer);
    if (calls.length === 0) return messages.length;
    for (const call of calls) messages.push(await naiveTool(call));
  }
}
