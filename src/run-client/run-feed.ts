/**
 * Shared reads of run streams: one reader per run per process, however many clients follow that
 * run. The feed keeps the last items it received; each client reads from its own position and
 * waits on the feed, not on the workflow, so 50 clients cost the run what one does. The reader
 * asks the run's `stream` query (every 100 ms while items come and for a second after, then
 * slowing to 500 ms):
 * the workflow stream's own long-poll update records every answer in the run's history, which
 * measured 2–3.5× the history of a run without streaming (bench/results/run-history.md).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Client, WorkflowHandle } from "@temporalio/client";
import type { AgentEvent, LiveEvent } from "../core/events";
import { streamQuery } from "../workflows/definitions";

/** Items a feed keeps for clients that fall behind or join late. */
const FEED_ITEMS_KEPT = 2_000;
/**
 * How long a feed is kept after its run closed: clients that reconnect or come late still get
 * the last message's deltas (the run's query has its numbered events only).
 */
const FEED_LINGER_MS = 60_000;

export type RunStreamEvent = AgentEvent | LiveEvent;

export interface FeedItem {
  /** Position in this feed (0, 1, 2, …): what readers count by. */
  n: number;
  /** Offset in the run's stream. */
  offset: number;
  event: RunStreamEvent;
}

/** Why a feed stopped: the run closed, or the subscription failed (a run without a stream, an outage). */
export type FeedEnd = { kind: "closed" } | { kind: "failed"; error: unknown };

export interface FeedRead {
  items: FeedItem[];
  /** Set once the feed has stopped and `items` holds all it will ever have after the position. */
  end?: FeedEnd;
}

export class RunFeed {
  private items: FeedItem[] = [];
  private nextN = 0;
  private ended?: FeedEnd;
  private readonly waiters = new Set<() => void>();

  private lastRead = Date.now();

  /** @param stream the run's stream items, in order; ends when the run has closed. */
  constructor(stream: AsyncIterable<{ offset: number; data: RunStreamEvent }>, onEnd: () => void) {
    void this.pump(stream).then(onEnd);
  }

  /** Milliseconds since a reader last read (0 while one waits). */
  idleFor(): number {
    return this.waiters.size > 0 ? 0 : Date.now() - this.lastRead;
  }

  /**
   * Items from position `from` on (from the oldest kept when those are gone), waiting up to
   * `waitMs` for one when there are none yet; an empty read means nothing arrived in time.
   */
  async read(from: number, waitMs: number, signal?: AbortSignal): Promise<FeedRead> {
    this.lastRead = Date.now();
    if (!this.hasAfter(from) && !this.ended && !signal?.aborted) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(done);
          signal?.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, waitMs);
        this.waiters.add(done);
        signal?.addEventListener("abort", done, { once: true });
      });
    }
    const first = this.items[0]?.n ?? this.nextN;
    const items = this.items.slice(Math.max(0, from - first));
    return this.ended ? { items, end: this.ended } : { items };
  }

  /** The feed has stopped: its run closed or it could not be read. */
  get stopped(): boolean {
    return this.ended !== undefined;
  }

  private hasAfter(from: number): boolean {
    return this.nextN > from;
  }

  private async pump(stream: AsyncIterable<{ offset: number; data: RunStreamEvent }>): Promise<void> {
    try {
      for await (const item of stream) {
        this.items.push({ n: this.nextN++, offset: item.offset, event: item.data });
        if (this.items.length > FEED_ITEMS_KEPT) this.items.splice(0, this.items.length - FEED_ITEMS_KEPT);
        this.wake();
      }
      this.ended = { kind: "closed" };
    } catch (error) {
      this.ended = { kind: "failed", error };
    }
    this.wake();
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

/** How often a feed asks its run for new items, at most and (after quiet polls) at least. */
const FEED_POLL_MS = { min: 100, max: 500 } as const;
/**
 * How long after its last item a feed keeps polling at the fastest pace: batches of deltas come
 * every few hundred ms while an answer streams, and a poll that slowed between two of them would
 * read the next one late (measured: bench/results/stream-latency.md).
 */
const FEED_ACTIVE_MS = 1_000;
/** A feed nobody read for this long stops (a later client starts another). */
const FEED_ABANDONED_MS = 60_000;
/** Quiet polls between two checks that the run is still open (it may close without agent_end). */
const POLLS_PER_OPEN_CHECK = 20;

/**
 * Reads a run's stream page by page with the run's `stream` query: queries are not recorded in
 * the run's history (a stream poll update is, with every item it returns).
 */
async function* queriedStream(
  handle: WorkflowHandle,
  isAbandoned: () => boolean,
): AsyncGenerator<{ offset: number; data: RunStreamEvent }> {
  let from = 0;
  let wait: number = FEED_POLL_MS.min;
  let quiet = 0;
  let lastItemAt = Date.now();
  for (;;) {
    const page = await handle.query(streamQuery, from);
    for (const item of page.items) yield { offset: item.offset, data: item.data as RunStreamEvent };
    from = page.nextOffset;
    if (page.items.some((item) => (item.data as RunStreamEvent).type === "agent_end")) return;
    if (page.more) continue;
    if (page.items.length > 0) {
      wait = FEED_POLL_MS.min;
      quiet = 0;
      lastItemAt = Date.now();
    } else {
      if (Date.now() - lastItemAt >= FEED_ACTIVE_MS) wait = Math.min(FEED_POLL_MS.max, wait * 1.5);
      quiet += 1;
      if (isAbandoned()) return;
      if (quiet % POLLS_PER_OPEN_CHECK === 0 && (await handle.describe()).status.name !== "RUNNING") {
        // Closed without agent_end (failed, terminated): whatever it published last is read once more.
        const last = await handle.query(streamQuery, from);
        for (const item of last.items) yield { offset: item.offset, data: item.data as RunStreamEvent };
        return;
      }
    }
    await sleep(wait);
  }
}

/** The process's feeds by workflow id; a feed goes `FEED_LINGER_MS` after its run closes. */
export class RunFeeds {
  private readonly feeds = new Map<string, RunFeed>();

  constructor(private readonly client: Client) {}

  /**
   * The feed of the run under `workflowId`, from the stream's oldest kept item.
   * `runOpen`: the caller saw the latest run open; a stopped feed then belongs to an earlier run.
   */
  feed(workflowId: string, runOpen: boolean): RunFeed {
    let feed = this.feeds.get(workflowId);
    if (!feed || (feed.stopped && runOpen)) {
      const handle = this.client.workflow.getHandle(workflowId);
      const created: RunFeed = new RunFeed(
        queriedStream(handle, () => created.idleFor() > FEED_ABANDONED_MS),
        () => {
          setTimeout(() => {
            if (this.feeds.get(workflowId) === created) this.feeds.delete(workflowId);
          }, FEED_LINGER_MS).unref();
        },
      );
      feed = created;
      this.feeds.set(workflowId, feed);
    }
    return feed;
  }

  /** Feeds open now (for tests and metrics). */
  get size(): number {
    return this.feeds.size;
  }
}
