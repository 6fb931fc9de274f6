/**
 * Plain run types shared by the run workflow and the activities it calls, so neither imports the
 * other's modules. Types only: safe inside the workflow bundle (no zod, no I/O).
 */

/** Where the next entry of a session goes: its sequence number and its parent (the leaf). */
export interface SessionCursor {
  nextSeq: number;
  leafId: string | null;
}

/** The chat thread a run's final answer is posted to (runs started from a chat thread). */
export interface ChatReplyTarget {
  kind: "slack";
  channel: string;
  threadTs: string;
}
