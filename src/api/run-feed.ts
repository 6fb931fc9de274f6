/**
 * Shared subscriptions to run streams: one long-poll subscription per run per process, however
 * many clients follow that run. The feed keeps the last items it received; each client reads
 * from its own position and waits on the feed, not on the workflow, so 50 clients cost the run
 * what one does.
 */
import type { Client } from "@temporalio/client";
import { WorkflowStreamClient } from "@temporalio/workflow-streams/client";
import type { AgentEvent, LiveEvent } from "../core/events";

/** Items a feed keeps for clients that fall behind or join late. */
export const FEED_ITEMS_KEPT = 2_000;
/**
 * How long a feed is kept after its run closed: clients that reconnect or come late still get
 * the last message's deltas (the run's query has its numbered events only).
 */
export const FEED_LINGER_MS = 60_000;

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

  /**
   * @param subscribe opens a subscription from a stream offset.
   * @param isOpen says whether the run is still open: a subscription also ends when a poll's RPC
   *   times out (a run quiet for a while), and the feed then subscribes again.
   */
  constructor(
    subscribe: (fromOffset: number) => AsyncIterable<{ offset: number; data: RunStreamEvent }>,
    isOpen: () => Promise<boolean>,
    onEnd: () => void,
  ) {
    void this.pump(subscribe, isOpen).then(onEnd);
  }

  /**
   * Items from position `from` on (from the oldest kept when those are gone), waiting up to
   * `waitMs` for one when there are none yet; an empty read means nothing arrived in time.
   */
  async read(from: number, waitMs: number, signal?: AbortSignal): Promise<FeedRead> {
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

  private async pump(
    subscribe: (fromOffset: number) => AsyncIterable<{ offset: number; data: RunStreamEvent }>,
    isOpen: () => Promise<boolean>,
  ): Promise<void> {
    let from = 0;
    try {
      do {
        for await (const item of subscribe(from)) {
          this.items.push({ n: this.nextN++, offset: item.offset, event: item.data });
          if (this.items.length > FEED_ITEMS_KEPT) this.items.splice(0, this.items.length - FEED_ITEMS_KEPT);
          from = item.offset + 1;
          this.wake();
        }
      } while (await isOpen());
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

/** The process's feeds by workflow id; a feed goes `FEED_LINGER_MS` after its run closes. */
export class RunFeeds {
  private readonly feeds = new Map<string, RunFeed>();

  constructor(private readonly client: Client) {}

  /**
   * The feed of the run under `workflowId`, subscribing from the stream's oldest kept item.
   * `runOpen`: the caller saw the latest run open; a stopped feed then belongs to an earlier run.
   */
  feed(workflowId: string, runOpen: boolean): RunFeed {
    let feed = this.feeds.get(workflowId);
    if (!feed || (feed.stopped && runOpen)) {
      const stream = WorkflowStreamClient.create(this.client, workflowId);
      const handle = this.client.workflow.getHandle(workflowId);
      const created = new RunFeed(
        (from) => stream.subscribe<RunStreamEvent>([], from, { resultType: true }),
        async () => (await handle.describe()).status.name === "RUNNING",
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
