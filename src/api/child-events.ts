/**
 * Sub-agents in a parent's event stream (`GET …/events?children=true`): while a `task` call runs,
 * its child run's numbered events are sent too, as SSE events named `child` whose data is the
 * child's event with `child: {sessionId, toolCallId, parentSessionId}` (the session whose call
 * started it), so a client can nest them under the call. A child's own `task` calls are followed
 * the same way, level by level (nested sub-agents: a grandchild's events name the child session
 * as their `parentSessionId`).
 * They come between the call's `tool_execution_start` and its `tool_execution_end` (which waits for
 * the child's last events). They carry no SSE id: `Last-Event-ID` stays the parent's, and a client
 * resuming in the middle of a call gets that child's events again from its first (`child.seq`
 * tells repeats apart). The child's run is read through its `events` query, polled; live deltas
 * are not forwarded (a client wanting them subscribes to the child session's own stream).
 */
import type { SSEStreamingApi } from "hono/streaming";
import type { SessionRef } from "../contracts/runs";
import { childSessionId, MAX_SUB_AGENT_DEPTH, TASK_TOOL_NAME } from "../core/agents";
import type { AgentEvent } from "../core/events";
import type { RunClient } from "../run-client/run-client";

/** How often a running child's events are asked for. */
const CHILD_POLL_INTERVAL_MS = 300;

/** Where a forwarded event comes from: the child session, and the `task` call of the session that started it. */
export interface ChildMark {
  sessionId: string;
  toolCallId: string;
  parentSessionId: string;
}

interface Forwarder {
  /** Set when the parent's call ended: one last read, then the loop stops. */
  stopping: boolean;
  done: Promise<void>;
}

/** The forwarders of one session's events in a stream: one per running `task` call shown of it. */
export class ChildEvents {
  private readonly forwarders = new Map<string, Forwarder>();

  /** `depth`: the level of `parent`'s own children (1 for the stream's session's). */
  constructor(
    private readonly stream: SSEStreamingApi,
    private readonly runs: RunClient,
    private readonly parent: SessionRef,
    private readonly closed: AbortSignal,
    private readonly depth = 1,
  ) {}

  /** Before the parent's `event` is sent: a task call's end first sends its child's last events. */
  async before(event: AgentEvent): Promise<void> {
    if (event.type !== "tool_execution_end" || event.toolName !== TASK_TOOL_NAME) return;
    const forwarder = this.forwarders.get(event.toolCallId);
    if (!forwarder) return;
    forwarder.stopping = true;
    await forwarder.done;
    this.forwarders.delete(event.toolCallId);
  }

  /** After the parent's `event` was sent: a task call's start begins forwarding its child's events. */
  after(event: AgentEvent): void {
    if (event.type !== "tool_execution_start" || event.toolName !== TASK_TOOL_NAME) return;
    if (this.forwarders.has(event.toolCallId)) return;
    const mark = {
      sessionId: childSessionId(this.parent.sessionId, event.toolCallId),
      toolCallId: event.toolCallId,
      parentSessionId: this.parent.sessionId,
    };
    const forwarder: Forwarder = { stopping: false, done: Promise.resolve() };
    // A child that cannot be read does not end the parent's stream: the client is told, once.
    forwarder.done = this.forward(mark, forwarder).catch((error: unknown) =>
      this.closed.aborted
        ? undefined
        : this.stream.writeSSE({
            event: "child_error",
            data: JSON.stringify({
              child: mark,
              message: `the sub-agent's events cannot be read: ${String(error)}`,
            }),
          }),
    );
    this.forwarders.set(event.toolCallId, forwarder);
  }

  /** When the parent's stream ends: stops every forwarder (each sends what it has read). */
  async close(): Promise<void> {
    for (const forwarder of this.forwarders.values()) forwarder.stopping = true;
    await Promise.all([...this.forwarders.values()].map((forwarder) => forwarder.done));
    this.forwarders.clear();
  }

  private async forward(mark: ChildMark, forwarder: Forwarder): Promise<void> {
    const ref = { tenantId: this.parent.tenantId, sessionId: mark.sessionId };
    // The child's own children, one level down (none below the deepest level agents reach).
    const grandchildren =
      this.depth < MAX_SUB_AGENT_DEPTH
        ? new ChildEvents(this.stream, this.runs, ref, this.closed, this.depth + 1)
        : undefined;
    let after = 0;
    try {
      while (!this.closed.aborted) {
        // Read once more after the stop was asked: the child's last events come before the call's end.
        const last = forwarder.stopping;
        for (const event of await this.runs.events(ref, after)) {
          await grandchildren?.before(event);
          await this.stream.writeSSE({ event: "child", data: JSON.stringify({ ...event, child: mark }) });
          grandchildren?.after(event);
          after = event.seq;
          if (event.type === "agent_end") return;
        }
        if (last) return;
        await this.stream.sleep(CHILD_POLL_INTERVAL_MS);
      }
    } finally {
      await grandchildren?.close();
    }
  }
}
