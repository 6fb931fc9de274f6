/**
 * The run's event model: what a caller can watch while a run works. Every event carries a
 * sequence number (`seq`, increasing without gaps within a run and across its continuations)
 * and the epoch-ms time it was recorded (`at`). Payloads are short: ids, names, previews.
 */

export type RunEventInput =
  | { type: "agent_start" }
  | { type: "agent_end"; status: "completed" | "aborted" | "failed"; reason: string }
  | { type: "turn_start"; turn: number }
  | { type: "turn_end"; turn: number }
  | { type: "message_start"; role: "user" | "assistant"; entryId: string }
  | {
      type: "message_end";
      role: "user" | "assistant";
      entryId: string;
      preview?: string;
      stopReason?: string;
    }
  | { type: "tool_execution_start"; toolCallId: string; name: string }
  | { type: "tool_execution_update"; toolCallId: string; preview: string }
  | { type: "tool_execution_end"; toolCallId: string; name: string; isError: boolean; preview?: string }
  | { type: "compaction_start"; reason: string }
  | { type: "compaction_end"; compacted: boolean; tokensBefore: number }
  | { type: "retry"; activity: string; attempt: number; reason: string }
  | { type: "approval_requested"; toolCallId: string; name: string }
  | { type: "approval_resolved"; toolCallId: string; decision: "approve" | "reject" | "timeout" }
  | { type: "queue_update"; queue: "steering" | "followUp"; length: number };

export type RunEventType = RunEventInput["type"];

/** A recorded event: the input plus its sequence number and time. */
export type RunEvent = RunEventInput & { seq: number; at: number };
