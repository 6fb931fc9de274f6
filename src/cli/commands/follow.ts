/** Following a session's latest run until it ends, across stream reconnects. */
import { setTimeout as sleep } from "node:timers/promises";
import { type ApiClient, ApiError } from "../../api-client/client";
import type { AgentEndStatus, AgentEvent } from "../../core/events";
import type { AgentMessage, ToolResultMessage } from "../../core/messages";
import type { EventPrinter } from "../render";

/** How long to wait before reconnecting a stream that ended while the run was still live. */
const RECONNECT_DELAY_MS = 300;
/** How long to wait before asking again for a run that did not answer. */
const WAIT_RETRY_MS = 2_000;
/** How often a session that does not exist yet is asked for again (a run starts within a second). */
const SESSION_POLL_MS = 500;

/** Errors that say the run cannot be read now but may be soon: its stream failed, no worker answers, a 503. */
function isWaitable(error: unknown): error is ApiError {
  return error instanceof ApiError && (error.slug === "stream-error" || error.status === 503);
}
const ENTRIES_PAGE_LIMIT = 1_000;

/** Run statuses of a workflow Temporal closed by failure: the run did not complete. */
const CLOSED_BY_FAILURE = new Set(["failed", "terminated", "timed_out", "canceled"]);

/** The fields of a stored entry this module reads (the API types entries as plain records). */
type EntryView = { id: string; type: string; message?: AgentMessage };

/**
 * Run events name messages by entry id and tool calls by id; people want to see the text, the
 * tokens and the arguments. This reads the session's entries as they appear (one page request per
 * message) and fills `message_end.message`, `tool_execution_start.args` and
 * `tool_execution_end.result` in.
 */
export class EventDetails {
  private after: number | undefined;
  private readonly messages = new Map<string, AgentMessage>();
  private readonly toolArgs = new Map<string, Record<string, unknown>>();
  private readonly toolResults = new Map<string, ToolResultMessage>();

  constructor(
    private readonly client: ApiClient,
    private readonly sessionId: string,
  ) {}

  /** The event with its message or arguments filled in when they can be found; never throws. */
  async complete(event: AgentEvent): Promise<AgentEvent> {
    try {
      if (event.type === "message_end" && !event.message) {
        if (!this.messages.has(event.entryId)) await this.readNewEntries();
        const message = this.messages.get(event.entryId);
        return message ? { ...event, message } : event;
      }
      if (event.type === "tool_execution_end" && !event.result) {
        if (!this.toolResults.has(event.toolCallId)) await this.readNewEntries();
        const result = this.toolResults.get(event.toolCallId);
        return result ? { ...event, result } : event;
      }
      if (event.type === "tool_execution_start" && !event.args) {
        const args = this.toolArgs.get(event.toolCallId);
        return args ? { ...event, args } : event;
      }
    } catch {
      // Details are a nicety: the event is shown as it came.
    }
    return event;
  }

  private async readNewEntries(): Promise<void> {
    for (;;) {
      const page = await this.client.json(
        this.client.api.v1.sessions[":sessionId"].entries.$get({
          param: { sessionId: this.sessionId },
          query: {
            limit: String(ENTRIES_PAGE_LIMIT),
            ...(this.after !== undefined ? { after: String(this.after) } : {}),
          },
        }),
      );
      for (const { seq, entry: stored } of page.entries) {
        this.after = seq;
        const entry = stored as EntryView;
        if (entry.type !== "message" || !entry.message) continue;
        this.messages.set(entry.id, entry.message);
        if (entry.message.role === "toolResult")
          this.toolResults.set(entry.message.toolCallId, entry.message);
        if (entry.message.role !== "assistant") continue;
        for (const block of entry.message.content) {
          if (block.type === "toolCall") this.toolArgs.set(block.id, block.arguments);
        }
      }
      if (page.nextAfter === undefined || page.entries.length === 0) return;
    }
  }
}

/**
 * Prints the events after `after` until the run ends; resolves with the run's end status ("failed"
 * also for a workflow that failed or was terminated without `agent_end`), or undefined when the
 * session has no run (or it ended before any `agent_end` could be seen).
 * A stream cut short (a proxy timeout, `KEEL_API_SSE_MAX_SECONDS`) is resumed from the last id
 * seen. Live events (deltas, tool output so far) are printed as they come unless `deltas` is
 * false. With `details`, messages and tool arguments are filled in before printing.
 */
export async function followRun(
  client: ApiClient,
  sessionId: string,
  after: number,
  printer: EventPrinter,
  options: {
    details?: EventDetails;
    onEvent?: (event: AgentEvent) => void;
    deltas?: boolean;
    /** Where Ctrl-C's note goes (how to reattach); without it Ctrl-C is left to the caller. */
    err?: (text: string) => void;
    /**
     * Wait for a session that does not exist yet (`keel events --follow` started before the run
     * that creates it), saying so once, instead of failing with 404.
     */
    waitForSession?: boolean;
  } = {},
): Promise<AgentEndStatus | undefined> {
  let lastSeq = after;
  let lastId = String(after);
  const take = async (raw: AgentEvent): Promise<AgentEndStatus | undefined> => {
    const event = options.details ? await options.details.complete(raw) : raw;
    printer.print(event);
    lastSeq = event.seq;
    lastId = String(event.seq);
    options.onEvent?.(event);
    return event.type === "agent_end" ? event.status : undefined;
  };
  const { err } = options;
  // Ctrl-C stops following, not the run: say so, and how to get back to it.
  const onInterrupt = () => {
    printer.done();
    err?.(followInterruptedNote(sessionId));
    process.exit(130);
  };
  if (err) process.once("SIGINT", onInterrupt);
  printer.waiting();
  let toldWhy = false;
  /**
   * Stream errors since the last event: the first is a stream that broke off (the API's read of
   * the run failed once) and is resumed quietly from the last id; a second in a row is said.
   */
  let brokenStreams = 0;
  let awaitingSession = options.waitForSession === true;
  let toldAwaiting = false;
  try {
    for (;;) {
      try {
        for await (const { id, event } of client.events(sessionId, lastId, { deltas: options.deltas })) {
          // The session exists once its stream answers; a 404 after that is an answer, not a wait.
          awaitingSession = false;
          brokenStreams = 0;
          if (!("seq" in event)) {
            printer.live(event);
            if (id !== undefined) lastId = id;
            continue;
          }
          const status = await take(event);
          if (status) return status;
        }
        awaitingSession = false;
        // The stream ended without agent_end: either the run is over or the stream was cut.
        const page = await readEventsPage(client, sessionId, lastSeq);
        for (const event of page.events) {
          const status = await take(event);
          if (status) return status;
        }
        // A session waited for may be stored a moment before its run starts: wait for the run too.
        const runNotStarted = toldAwaiting && lastSeq === after && page.events.length === 0 && !page.run;
        if (page.runEnded && !runNotStarted)
          return page.run && CLOSED_BY_FAILURE.has(page.run.status) ? "failed" : undefined;
        await sleep(RECONNECT_DELAY_MS);
      } catch (error) {
        if (awaitingSession && error instanceof ApiError && error.slug === "session-not-found") {
          if (!toldAwaiting) {
            printer.done();
            err?.(`Waiting for session ${sessionId} to be created (Ctrl-C stops waiting)…\n`);
            printer.waiting("waiting for the session");
            toldAwaiting = true;
          }
          await sleep(SESSION_POLL_MS);
          continue;
        }
        if (error instanceof ApiError && error.slug === "stream-error" && brokenStreams++ === 0) {
          await sleep(RECONNECT_DELAY_MS);
          continue;
        }
        // The run is durable: a worker that died or a stack that restarts is waited out, and said.
        if (!isWaitable(error)) throw error;
        if (!toldWhy) {
          printer.done();
          err?.(`Waiting for the run: ${error.message}\n`);
          printer.waiting("waiting for a worker");
          toldWhy = true;
        }
        await sleep(WAIT_RETRY_MS);
      }
    }
  } finally {
    process.off("SIGINT", onInterrupt);
    printer.done();
  }
}

/** What Ctrl-C during `--follow` prints: the run goes on, and the commands that reach it. */
export function followInterruptedNote(sessionId: string): string {
  return `\nStopped following; the run goes on. Follow it again: keel events ${sessionId} --follow · stop it: keel abort ${sessionId}\n`;
}

/** One JSON page of the latest run's events after `after`. */
export async function readEventsPage(
  client: ApiClient,
  sessionId: string,
  after: number,
): Promise<{ events: AgentEvent[]; lastSeq: number; runEnded: boolean; run?: { status: string } }> {
  const page = await client.json(
    client.api.v1.sessions[":sessionId"].events.$get({
      param: { sessionId },
      query: { after: String(after) },
    }),
  );
  // The route also streams (SSE) when asked to; this request asked for JSON.
  if (!("events" in page)) throw new Error("the events route answered a stream to a JSON request");
  // The API's schema types events loosely (seq and type); they are the run's AgentEvents.
  return {
    events: page.events as AgentEvent[],
    lastSeq: page.lastSeq,
    runEnded: page.runEnded,
    // How the run ended when the workflow closed without agent_end (failed, terminated, …).
    ...("run" in page && page.run ? { run: page.run } : {}),
  };
}
