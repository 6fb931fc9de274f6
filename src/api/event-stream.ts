/**
 * The SSE event stream of a session's run. Numbered run events carry `id: <seq>`; live events
 * (deltas, tool output so far) carry `id: <seq>:<offset>` — the last numbered event before them
 * and their offset in the run's stream — so `Last-Event-ID` resumes after either. Clients read
 * the process's shared feed of the run (one subscription per run); the run's `events` query is
 * asked only to fill a gap (a client resuming further back than the feed keeps), once the run
 * has closed (its last events), and for runs without a stream (started before streams existed).
 */
import type { SSEStreamingApi } from "hono/streaming";
import type { SessionRef } from "../contracts/runs";
import type { AgentEvent } from "../core/events";
import type { RunClient } from "../run-client/run-client";
import type { FeedItem } from "../run-client/run-feed";
import { ChildEvents } from "./child-events";
import { liveState } from "./routes/common";

/** How often the fallback loop (a run without a stream) asks the run for new events. */
const EVENT_POLL_INTERVAL_MS = 300;
/** An SSE comment this often keeps idle connections (and proxies) open. */
const SSE_KEEPALIVE_MS = 15_000;
/**
 * A stream quiet this long asks Temporal what the run waits for (and again as often while it
 * stays quiet), so a wait on a runner or a worker is told within seconds, not after it.
 */
const WAIT_CHECK_MS = 2_000;

/** Where a client resumes: after numbered event `seq` and, among the live events after it, stream offset `offset`. */
export interface ResumePoint {
  seq: number;
  offset?: number;
}

/** `Last-Event-ID` as this stream writes it (`seq` or `seq:offset`); undefined for anything else. */
export function resumePointOf(header: string | undefined): ResumePoint | undefined {
  const match = header?.trim().match(/^(\d{1,15})(?::(\d{1,15}))?$/);
  if (!match) return undefined;
  return match[2] === undefined
    ? { seq: Number(match[1]) }
    : { seq: Number(match[1]), offset: Number(match[2]) };
}

export interface EventStreamOptions {
  /** Send live events too (default); false gives the numbered events only. */
  deltas: boolean;
  /** Close the stream after this long (0 = never); clients reconnect with Last-Event-ID. */
  maxSeconds: number;
  /** The latest run was open when the client came (see RunFeeds.feed). */
  runOpen: boolean;
  /** Told when the run's stream cannot be read and the events query is polled instead. */
  onFallback: (error: unknown) => void;
  /** Send the events of the run's sub-agents too, nested (src/api/child-events.ts). */
  children?: boolean;
  /** Ends the stream when aborted (the caller's key was revoked). */
  stop?: AbortSignal;
}

/**
 * Streams the run's events after `resume` until `agent_end`, the run closes, the client goes or
 * `maxSeconds` pass.
 */
export async function streamRunEvents(
  stream: SSEStreamingApi,
  runs: RunClient,
  ref: SessionRef,
  resume: ResumePoint,
  options: EventStreamOptions,
): Promise<void> {
  const closed = new AbortController();
  stream.onAbort(() => closed.abort());
  options.stop?.addEventListener("abort", () => closed.abort(), { once: true });
  const deadline = options.maxSeconds > 0 ? Date.now() + options.maxSeconds * 1000 : Number.POSITIVE_INFINITY;
  const children = options.children ? new ChildEvents(stream, runs, ref, closed.signal) : undefined;
  try {
    await streamEvents(stream, runs, ref, resume, options, { closed, deadline, children });
  } finally {
    await children?.close();
  }
}

async function streamEvents(
  stream: SSEStreamingApi,
  runs: RunClient,
  ref: SessionRef,
  resume: ResumePoint,
  options: EventStreamOptions,
  { closed, deadline, children }: { closed: AbortController; deadline: number; children?: ChildEvents },
): Promise<void> {
  let sentSeq = resume.seq;
  /** The numbered event the feed showed last (undefined until it shows one). */
  let feedSeq: number | undefined;
  let position = 0;

  const send = async (event: AgentEvent) => {
    await sendNumbered(stream, event, children);
    sentSeq = event.seq;
  };
  /** Numbered events after the last sent, below `beforeSeq`, from the run's query. */
  const fillFromQuery = async (beforeSeq = Number.POSITIVE_INFINITY): Promise<boolean> => {
    for (const event of await runs.events(ref, sentSeq)) {
      if (event.seq >= beforeSeq) break;
      await send(event);
      if (event.type === "agent_end") return true;
    }
    return false;
  };
  /** A live event belongs after what the client has: it follows the last numbered event sent. */
  const follows = (item: FeedItem) =>
    (feedSeq === undefined ? sentSeq === 0 || resume.offset !== undefined : feedSeq === sentSeq) &&
    (resume.offset === undefined || item.offset > resume.offset);

  const feed = runs.feed(ref, options.runOpen);
  const waits = new WaitTeller(stream, runs, ref);
  let lastItemAt = Date.now();
  let lastWriteAt = Date.now();
  while (!closed.signal.aborted && Date.now() < deadline) {
    const wait = Math.min(WAIT_CHECK_MS, deadline - Date.now());
    const { items, end } = await feed.read(position, wait, closed.signal);
    if (items.length === 0 && !end) {
      if (closed.signal.aborted) continue;
      const now = Date.now();
      if (now - lastItemAt >= WAIT_CHECK_MS && (await waits.tell())) lastWriteAt = now;
      if (now - lastWriteAt >= SSE_KEEPALIVE_MS) {
        await stream.write(": keep-alive\n\n");
        lastWriteAt = now;
      }
      continue;
    }
    lastItemAt = Date.now();
    lastWriteAt = lastItemAt;
    for (const item of items) {
      position = item.n + 1;
      const event = item.event;
      if (!("seq" in event)) {
        if (options.deltas && follows(item))
          await stream.writeSSE({
            id: `${sentSeq}:${item.offset}`,
            event: event.type,
            data: JSON.stringify(event),
          });
        continue;
      }
      // The feed no longer holds what the client missed: the query still does.
      if (event.seq > sentSeq + 1 && (await fillFromQuery(event.seq))) return;
      feedSeq = event.seq;
      if (event.seq <= sentSeq) continue;
      await send(event);
      waits.progressed();
      if (event.type === "agent_end") return;
    }
    if (end?.kind === "closed") {
      // The run closed before the feed saw its last events (or before this client came).
      await fillFromQuery();
      return;
    }
    if (end?.kind === "failed") {
      options.onFallback(end.error);
      return pollEvents(stream, runs, ref, sentSeq, deadline, closed.signal, children);
    }
  }
}

/**
 * Sends `event: waiting` (contracts/waits.ts; no id: it is not in the run's stream) when the run
 * waits on a runner or a worker, once per wait: the same wait is told again only after the run
 * made progress.
 */
class WaitTeller {
  private told?: string;

  constructor(
    private readonly stream: SSEStreamingApi,
    private readonly runs: RunClient,
    private readonly ref: SessionRef,
  ) {}

  /** Asks what the run waits for and tells a new wait; true when it wrote. */
  async tell(): Promise<boolean> {
    // A description that fails says nothing new: the stream goes on as it would without it.
    const wait = await this.runs.wait(this.ref).catch(() => undefined);
    if (!wait || wait.message === this.told) return false;
    this.told = wait.message;
    await this.stream.writeSSE({ event: "waiting", data: JSON.stringify(wait) });
    return true;
  }

  /** The run sent a numbered event: a wait after it is a new one. */
  progressed(): void {
    this.told = undefined;
  }
}

/**
 * The fallback for runs without a stream: polls the run's events query until `agent_end` or the
 * run closes. A run started after the one a client was following restarts numbering at 1; the
 * loop notices (the run's last seq is below the client's) and starts from 0.
 */
async function pollEvents(
  stream: SSEStreamingApi,
  runs: RunClient,
  ref: SessionRef,
  startAfter: number,
  deadline: number,
  closed: AbortSignal,
  children: ChildEvents | undefined,
): Promise<void> {
  let after = startAfter;
  let lastWrite = Date.now();
  while (!closed.aborted && Date.now() < deadline) {
    const events = await runs.events(ref, after);
    for (const event of events) {
      await sendNumbered(stream, event, children);
      after = event.seq;
      lastWrite = Date.now();
      if (event.type === "agent_end") return;
    }
    if (events.length === 0) {
      // A workflow that failed or was terminated never sends agent_end: its closed status ends the stream.
      const state = liveState(await runs.latestRun(ref));
      if (!state) return;
      if (state.lastEventSeq < after) after = 0;
      if (Date.now() - lastWrite >= SSE_KEEPALIVE_MS) {
        await stream.write(": keep-alive\n\n");
        lastWrite = Date.now();
      }
    }
    await stream.sleep(EVENT_POLL_INTERVAL_MS);
  }
}

/** Writes a numbered run event; `children` nests a `task` call's child events around it. */
async function sendNumbered(stream: SSEStreamingApi, event: AgentEvent, children: ChildEvents | undefined) {
  await children?.before(event);
  await stream.writeSSE({ id: String(event.seq), event: event.type, data: JSON.stringify(event) });
  children?.after(event);
}
