/** Reading a run's stream in tests: every item until `agent_end`, with when it arrived. */
import type { Client } from "@temporalio/client";
import { WorkflowStreamClient } from "@temporalio/workflow-streams/client";
import type { AgentEvent, LiveEvent } from "../../src/core/events";
import type { AssistantMessage } from "../../src/core/messages";

export type StreamEvent = AgentEvent | LiveEvent;

export interface ReceivedItem {
  offset: number;
  topic: string;
  event: StreamEvent;
  /** Date.now() when the subscriber got it. */
  at: number;
}

/**
 * Subscribes to the workflow's stream from offset 0 and collects items until the run closes
 * (polling once more after `agent_end`, as a client that keeps reading does).
 */
export async function collectRunStream(client: Client, workflowId: string): Promise<ReceivedItem[]> {
  const stream = WorkflowStreamClient.create(client, workflowId);
  const items: ReceivedItem[] = [];
  for await (const item of stream.subscribe<StreamEvent>([], 0, { resultType: true })) {
    items.push({ offset: item.offset, topic: item.topic, event: item.data, at: Date.now() });
  }
  return items;
}

/**
 * The text a client rebuilds from `message_update` deltas for one entry: a `reset` drops what
 * came before it.
 */
export function rebuiltText(events: readonly StreamEvent[], entryId: string): string {
  let text = "";
  for (const event of events) {
    if (event.type !== "message_update" || event.entryId !== entryId) continue;
    const delta = event.assistantMessageEvent;
    if (delta.type === "reset") text = "";
    else if (delta.type === "text_delta") text += delta.delta;
  }
  return text;
}

export function textOf(message: AssistantMessage): string {
  return message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
}
