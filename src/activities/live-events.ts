/**
 * Live events from inside an activity (deltas of the message being built, a tool's output so
 * far), published to the run's stream by signal. Deltas are coalesced: consecutive deltas of one
 * content block merge, and a batch goes out at most every `intervalMs` or once `maxChars`
 * characters wait. Publishing is best effort: a failure is logged and dropped, never thrown,
 * because a lost delta costs a client nothing the final message does not bring.
 */
import { Context } from "@temporalio/activity";
import { WorkflowStreamClient } from "@temporalio/workflow-streams/client";
import { type LiveEvent, RUN_STREAM_TOPIC } from "../core/events";

export interface LiveEventOptions {
  /**
   * Longest a delta waits before it is sent (ms). Each batch is one signal in the run's history
   * (about 0.9 KB with the workflow task it wakes): a shorter wait is livelier and costs more.
   */
  intervalMs: number;
  /** Characters waiting that send the batch at once. */
  maxChars: number;
}

export const DEFAULT_LIVE_EVENT_OPTIONS: LiveEventOptions = { intervalMs: 100, maxChars: 256 };
/** Longest the activity waits for its last batch when it ends (a slow server must not hold it). */
const CLOSE_TIMEOUT_MS = 5_000;

/** Where live events go: the run's stream, or nowhere (streaming off, no workflow to reach). */
export interface LiveEventSink {
  /** Queues an event; deltas of the same content block merge with the one waiting. */
  publish(event: LiveEvent): void;
  /** Sends what waits and stops; never throws. */
  close(): Promise<void>;
}

const NO_SINK: LiveEventSink = { publish() {}, close: async () => {} };

/**
 * Appends `event` to `waiting`, merging it into the last waiting event when both are deltas of
 * the same kind to the same content block of the same message. Returns the characters added.
 */
export function coalesce(waiting: LiveEvent[], event: LiveEvent): number {
  const last = waiting[waiting.length - 1];
  if (
    event.type === "message_update" &&
    last?.type === "message_update" &&
    last.entryId === event.entryId &&
    last.attempt === event.attempt
  ) {
    const a = last.assistantMessageEvent;
    const b = event.assistantMessageEvent;
    if (a.type !== "reset" && b.type === a.type && b.contentIndex === a.contentIndex) {
      last.assistantMessageEvent = { ...a, delta: a.delta + b.delta };
      return b.delta.length;
    }
  }
  if (
    event.type === "tool_execution_update" &&
    last?.type === "tool_execution_update" &&
    last.toolCallId === event.toolCallId
  ) {
    // Each update carries the whole output so far: the newer one replaces the waiting one.
    waiting[waiting.length - 1] = event;
    return 0;
  }
  waiting.push(event);
  return event.type === "message_update" && event.assistantMessageEvent.type !== "reset"
    ? event.assistantMessageEvent.delta.length
    : event.type === "tool_execution_update"
      ? event.partial.length
      : 0;
}

/**
 * A sink publishing to the stream of the workflow that scheduled the current activity; `false`
 * (the worker's setting) gives a sink that drops everything.
 */
export function liveEventSink(options: LiveEventOptions | false): LiveEventSink {
  if (!options) return NO_SINK;
  const { log } = Context.current();
  let client: WorkflowStreamClient;
  try {
    client = WorkflowStreamClient.fromWithinActivity({
      // The sink below decides when to send; the client only batches what it is handed.
      batchInterval: options.intervalMs,
      maxRetryDuration: CLOSE_TIMEOUT_MS,
    });
  } catch (error) {
    // Not scheduled by a workflow, or the worker has no client: nothing to stream to.
    log.warn("live events are off for this activity", { error: String(error) });
    return NO_SINK;
  }
  const topic = client.topic<LiveEvent>(RUN_STREAM_TOPIC.live);
  let waiting: LiveEvent[] = [];
  let waitingChars = 0;
  let timer: NodeJS.Timeout | undefined;
  let failed = false;

  const send = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = waiting;
    waiting = [];
    waitingChars = 0;
    try {
      for (const event of batch) topic.publish(event);
      void client.flush().catch(dropped);
    } catch (error) {
      dropped(error);
    }
  };
  const dropped = (error: unknown) => {
    // Logged once per activity: a workflow that cannot be reached stays unreachable.
    if (!failed) log.warn("publishing live events failed; they are dropped", { error: String(error) });
    failed = true;
  };

  return {
    publish(event) {
      waitingChars += coalesce(waiting, event);
      if (waitingChars >= options.maxChars) send();
      else timer ??= setTimeout(send, options.intervalMs);
    },
    async close() {
      send();
      let timeout: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          client[Symbol.asyncDispose](),
          new Promise((resolve) => {
            timeout = setTimeout(resolve, CLOSE_TIMEOUT_MS);
          }),
        ]);
      } catch (error) {
        dropped(error);
      } finally {
        clearTimeout(timeout);
      }
    },
  };
}

/** The current activity's attempt (1 for the first), which live events carry. */
export function currentAttempt(): number {
  return Context.current().info.attempt;
}
