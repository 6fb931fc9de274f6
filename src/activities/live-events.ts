/**
 * Live events from inside an activity (deltas of the message being built, a tool's output so
 * far), published to the run's stream by signal. Deltas are coalesced: consecutive deltas of one
 * content block merge, and a batch (one signal in the run's history) goes out at most every
 * `intervalMs`. An attempt publishes at most `maxChars` characters: past that a message gets a
 * `cut` and nothing more (its text comes with `message_end`), so a huge answer or a chatty
 * command cannot fill the run's history. Publishing is best effort: a failure is logged and
 * dropped, never thrown, because a lost delta costs a client nothing the final message does not
 * bring.
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
  /** Characters (deltas, tool output) one activity attempt publishes at most. */
  maxChars: number;
}

/**
 * 250 ms: bench/results/run-history.md measured a turn streamed at 20 words/s at 1.39× the
 * history of a turn without streaming with 250 ms, 1.71× with 100 ms; the latency cost is in
 * bench/results/stream-latency.md.
 */
export const DEFAULT_LIVE_EVENT_OPTIONS: LiveEventOptions = { intervalMs: 250, maxChars: 32_000 };
/** Longest the activity waits for its last batch when it ends (a slow server must not hold it). */
const CLOSE_TIMEOUT_MS = 5_000;

/** Where live events go: the run's stream, or nowhere (streaming off, no workflow to reach). */
export interface LiveEventSink {
  /** Queues an event; deltas of the same content block merge with the one waiting. */
  publish(event: LiveEvent): void;
  /**
   * For an attempt that ends with a result: stops, waits until the batches already sent are
   * delivered, and returns what still waits. The activity returns those events with its result and
   * the run publishes them before the message's end, so the last batch of every call costs no
   * signal and no workflow task of its own. Never throws.
   */
  settle(): Promise<LiveEvent[]>;
  /** For an attempt that ends without a result (failed, cancelled): sends what waits and stops; never throws. */
  close(): Promise<void>;
}

const NO_SINK: LiveEventSink = { publish() {}, settle: async () => [], close: async () => {} };

/**
 * Appends `event` to `waiting`, merging it into the last waiting event when both are deltas of
 * the same kind to the same content block of the same message; a tool's update replaces its
 * waiting one.
 */
export function coalesce(waiting: LiveEvent[], event: LiveEvent): void {
  const last = waiting[waiting.length - 1];
  if (
    event.type === "message_update" &&
    last?.type === "message_update" &&
    last.entryId === event.entryId &&
    last.attempt === event.attempt
  ) {
    const a = last.assistantMessageEvent;
    const b = event.assistantMessageEvent;
    if (a.type !== "reset" && a.type !== "cut" && b.type === a.type && b.contentIndex === a.contentIndex) {
      last.assistantMessageEvent = { ...a, delta: a.delta + b.delta };
      return;
    }
  }
  if (
    event.type === "tool_execution_update" &&
    last?.type === "tool_execution_update" &&
    last.toolCallId === event.toolCallId
  ) {
    // Each update carries the whole output so far: the newer one replaces the waiting one.
    waiting[waiting.length - 1] = event;
    return;
  }
  waiting.push(event);
}

function charsOf(event: LiveEvent): number {
  if (event.type === "tool_execution_update") return event.partial.length;
  if (event.type !== "message_update") return 0;
  const delta = event.assistantMessageEvent;
  return delta.type === "reset" || delta.type === "cut" ? 0 : delta.delta.length;
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
  let published = 0;
  let spent = false;
  const cut = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let failed = false;

  const send = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = waiting;
    waiting = [];
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
      const chars = charsOf(event);
      if (chars > 0 && (spent || published + chars > options.maxChars)) {
        // Once spent, always spent: a later short delta must not leave a hole in the text.
        spent = true;
        if (event.type !== "message_update" || cut.has(event.entryId)) return;
        cut.add(event.entryId);
        event = { ...event, assistantMessageEvent: { type: "cut" } };
      }
      // Counted as offered: a replaced tool update counts too (conservative, and simple).
      published += chars;
      coalesce(waiting, event);
      timer ??= setTimeout(send, options.intervalMs);
    },
    async settle() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      const tail = waiting;
      waiting = [];
      await stop();
      return tail;
    },
    async close() {
      send();
      await stop();
    },
  };

  /** Waits (at most `CLOSE_TIMEOUT_MS`) until what was sent is delivered; never throws. */
  async function stop(): Promise<void> {
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
  }
}

/** `result` with the events its attempt had not sent (none: the result as it is). */
export function withLiveTail<T extends { live?: LiveEvent[] }>(result: T, tail: LiveEvent[]): T {
  return tail.length > 0 ? { ...result, live: tail } : result;
}
