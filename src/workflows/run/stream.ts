/**
 * The run's stream (Temporal workflow streams): numbered run events published as the workflow
 * emits them, and live events (deltas) that activities publish by signal while they run. Clients
 * long-poll it with the stream's update. The log lives in workflow memory only: it is truncated
 * to a bounded tail as it grows, and only a short tail crosses a continue-as-new.
 */
import type { Payload } from "@temporalio/common";
import { ApplicationFailure, condition, defaultPayloadConverter, setHandler } from "@temporalio/workflow";
import {
  type PollInput,
  type PollResult,
  type PublishInput,
  WorkflowStream,
  type WorkflowStreamState,
  workflowStreamPollUpdate,
  workflowStreamPublishSignal,
} from "@temporalio/workflow-streams/workflow";
import { type AgentEvent, type LiveEvent, RUN_STREAM_TOPIC } from "../../core/events";
import { type StreamPage, streamQuery } from "../definitions";
import type { RunRecord } from "./state";

/**
 * Stream items kept in memory (every cached run holds its log on the worker, like its 1,000
 * buffered events); a reader further behind restarts at the oldest kept.
 */
const STREAM_ITEMS_KEPT = 1_000;
/** Items a continue-as-new carries: the tail a subscriber polling right then still needs. */
export const STREAM_ITEMS_CARRIED = 50;
/** Items one `stream` query answers at most (the reader asks again for the rest). */
const STREAM_PAGE_ITEMS = 500;
/** Longest a closing run waits for its subscribers to fetch the last items. */
const DRAIN_TIMEOUT = "3 seconds";

/**
 * The stream's own handlers, which the library registers in its constructor and keeps private.
 * Pinned to @temporalio/workflow-streams 1.22.0 (package.json pins it exactly); what this module
 * relies on is checked against the installed library by test/unit/workflows/stream-contract.test.ts,
 * which fails when an upgrade changes it.
 */
export interface StreamInternals {
  draining: boolean;
  log: Array<{ topic: string; payload: Payload }>;
  baseOffset: number;
  onPublish(input: PublishInput): void;
  onPoll(input: PollInput): Promise<PollResult>;
}

export interface RunStream {
  /** Appends a numbered run event to the stream. */
  publish(event: AgentEvent): void;
  /**
   * Appends live events an activity returned with its result (those it had not sent by signal),
   * as if it had published them: readers see them before the run's next event.
   */
  publishLive(events: readonly LiveEvent[] | undefined): void;
  /**
   * Before the execution closes: when a subscriber polled during this execution, waits (at most
   * `DRAIN_TIMEOUT`) until one comes back for items past the last, so it has everything. A
   * poll still waiting when the execution closes fails, and one arriving after finds no run.
   */
  drain(): Promise<void>;
  /** Wakes waiting subscribers and refuses new polls: the execution is about to close. */
  detach(): void;
  /** The state a continue-as-new carries: the last few items, offsets kept. */
  carried(): WorkflowStreamState;
}

/**
 * Opens the run's stream, continuing `prior` (carried across continue-as-new). Publishes and
 * polls count as the signals and updates they are: Temporal caps both per execution, and the
 * run continues as new before it reaches the caps.
 */
export function openRunStream(run: RunRecord, prior: WorkflowStreamState | undefined): RunStream {
  const stream = new WorkflowStream(prior);
  const events = stream.topic<AgentEvent>(RUN_STREAM_TOPIC.events);
  const live = stream.topic<LiveEvent>(RUN_STREAM_TOPIC.live);
  // The library offers no hook to count its messages: its handlers are wrapped with the same
  // names (a later setHandler replaces an earlier one).
  const internals = stream as unknown as StreamInternals;
  setHandler(workflowStreamPublishSignal, (input: PublishInput) => {
    run.signalsSeen += 1;
    internals.onPublish(input);
    keepLast(STREAM_ITEMS_KEPT);
  });
  setHandler(
    workflowStreamPollUpdate,
    (input: PollInput) => {
      run.updatesSeen += 1;
      polled = true;
      polledUpTo = Math.max(polledUpTo, input.from_offset);
      return internals.onPoll(input);
    },
    {
      validator: (_input: PollInput) => {
        if (internals.draining) throw drainingFailure();
      },
    },
  );
  // Readers that must not grow the history (the API) query the log: a query is not recorded,
  // while every poll update is (with the items it returns).
  setHandler(streamQuery, (fromOffset: number): StreamPage => {
    const start = Math.max(0, fromOffset - internals.baseOffset);
    const page = internals.log.slice(start, start + STREAM_PAGE_ITEMS);
    return {
      items: page.map((item, index) => ({
        offset: internals.baseOffset + start + index,
        topic: item.topic,
        data: defaultPayloadConverter.fromPayload(item.payload),
      })),
      nextOffset: internals.baseOffset + start + page.length,
      more: start + page.length < internals.log.length,
    };
  });
  let polled = false;
  let polledUpTo = 0;
  /** Drops the oldest items beyond `keep`; offsets stay as they were. */
  const keepLast = (keep: number) => {
    const end = internals.baseOffset + internals.log.length;
    if (end - internals.baseOffset > keep) stream.truncate(end - keep);
  };
  return {
    publish(event) {
      events.publish(event);
      keepLast(STREAM_ITEMS_KEPT);
    },
    publishLive(tail) {
      if (!tail?.length) return;
      for (const event of tail) live.publish(event);
      keepLast(STREAM_ITEMS_KEPT);
    },
    async drain() {
      if (!polled) return;
      const end = internals.baseOffset + internals.log.length;
      await condition(() => polledUpTo >= end, DRAIN_TIMEOUT);
    },
    detach() {
      stream.detachPollers();
    },
    carried() {
      keepLast(STREAM_ITEMS_CARRIED);
      return stream.getState();
    },
  };
}

/** The library's refusal while draining: subscribers recognise its type and retry on the next execution. */
function drainingFailure(): ApplicationFailure {
  return ApplicationFailure.create({
    message: "Workflow is draining for continue-as-new",
    type: "StreamDraining",
    nonRetryable: true,
  });
}
