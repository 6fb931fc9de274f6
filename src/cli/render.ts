/**
 * Human output of a run's events: one line per thing that happened (turns, messages, tool calls,
 * tokens and cost), and a spinner while a person waits on a terminal. Pure formatting except for
 * `EventPrinter` and `Spinner`, which write.
 */
import type { RunWait } from "../contracts/waits";
import type { AgentEvent, LiveEvent } from "../core/events";
import type { AgentMessage, ToolResultMessage, Usage } from "../core/messages";
import type { Output } from "./output";
import { goOnAfter } from "./pause-advice";
import { Spinner } from "./spinner";

const PREVIEW_CHARS = 160;

/** `text` on one line, cut to `max` characters with an ellipsis. */
export function oneLine(text: string, max = PREVIEW_CHARS): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function formatUsd(amount: number): string {
  return `$${amount.toFixed(4)}`;
}

/** Tokens and cost of one message; `~` marks Keel's estimate, an unpriced model says so instead of "$0". */
export function formatUsage(usage: Usage): string {
  const approx = usage.estimated ? "~" : "";
  const cost = usage.cost.unpriced
    ? "cost not computed (no prices for this model)"
    : `${approx}${formatUsd(usage.cost.total)}`;
  return `${approx}${usage.input} in / ${approx}${usage.output} out tokens${usage.estimated ? " (estimated)" : ""} · ${cost}`;
}

/** The text a person reads of a user or assistant message (tool results: empty). */
export function textOf(message: AgentMessage): string {
  switch (message.role) {
    case "user":
      return typeof message.content === "string"
        ? message.content
        : message.content.map((block) => (block.type === "text" ? block.text : "[image]")).join(" ");
    case "assistant":
      return message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join(" ");
    default:
      return "";
  }
}

function formatArgs(args: Record<string, unknown> | undefined): string {
  if (!args || Object.keys(args).length === 0) return "";
  return ` ${oneLine(JSON.stringify(args), 100)}`;
}

type ApprovalDecision = Extract<AgentEvent, { type: "approval_resolved" }>["decision"];

/** What a person reads about a decision: a rejection (`denied` in older runs) says "rejected". */
function approvalOutcome(decision: ApprovalDecision): string {
  switch (decision) {
    case "approved":
      return "approved";
    case "rejected":
    case "denied":
      return "rejected";
    case "timed_out":
      return "not decided in time (refused)";
  }
}

/**
 * The line(s) shown for an event, or undefined for events a person does not need to see.
 * `streamed`: the assistant message's text was already shown live; only its usage line is left.
 */
export function formatEvent(
  event: AgentEvent,
  totals: { cost: number; tokens: number },
  streamed = false,
  sessionId?: string,
): string | undefined {
  switch (event.type) {
    case "agent_start":
      return `▶ run ${event.runId} started`;
    case "turn_start":
      return `── turn ${event.turn}`;
    case "turn_end":
      return event.errorMessage ? `   turn ${event.turn} failed: ${oneLine(event.errorMessage)}` : undefined;
    case "message_end": {
      const message = event.message;
      if (!message) return undefined;
      if (message.role === "user") return `  › user: ${oneLine(textOf(message))}`;
      if (message.role !== "assistant") return undefined;
      totals.cost += message.usage.cost.total;
      totals.tokens += message.usage.totalTokens;
      const lines: string[] = [];
      const thinking = message.content.find((block) => block.type === "thinking");
      if (!streamed && thinking?.type === "thinking" && thinking.thinking)
        lines.push(`  ∴ ${oneLine(thinking.thinking)}`);
      const text = textOf(message);
      if (!streamed && text) lines.push(`  ● ${oneLine(text, 400)}`);
      lines.push(`    ${formatUsage(message.usage)} (run total ${formatUsd(totals.cost)})`);
      return lines.join("\n");
    }
    case "tool_execution_start": {
      // Where it runs, when not on the worker (a runner environment, an MCP server).
      const where =
        event.ranOn && event.ranOn !== "worker" && event.ranOn !== "sub-agent" ? ` @ ${event.ranOn}` : "";
      return `  ⚙ ${event.toolName}${where}${formatArgs(event.args)}`;
    }
    case "tool_execution_end": {
      // The stored result is what counts: an aborted call is stored as an error whatever the event says.
      const isError = event.result?.isError ?? event.isError;
      const state = isError && event.state === "completed" ? "failed" : event.state;
      const why = isError && event.result ? lastLine(resultText(event.result)) : "";
      return `  ${isError ? "✗" : "✓"} ${event.toolName} ${state}${why ? `: ${oneLine(why, 300)}` : ""}`;
    }
    case "approval_requested": {
      const line = `  ? ${event.toolName} waits for approval (tool call ${event.toolCallId})${formatArgs(event.args)}`;
      if (sessionId === undefined) return line;
      const approve = `keel approve ${sessionId} ${event.toolCallId}`;
      return `${line}\n    approve: ${approve}    reject: ${approve} --reject`;
    }
    case "approval_resolved":
      return `  ! tool call ${event.toolCallId} ${approvalOutcome(event.decision)}`;
    case "mcp_server_unavailable":
      return `  ✗ MCP server ${event.server} unavailable: ${oneLine(event.error, 300)}`;
    case "mcp_tools_changed":
      return `  ⚙ MCP server ${event.server} changed its tools: ${event.tools.length} now`;
    case "model_fallback":
      return `  ⇄ model ${event.from} → ${event.to} (${event.reason}${event.error ? `: ${oneLine(event.error, 200)}` : ""})`;
    case "compaction_start":
      return `  ⇣ compacting (${event.reason}, ${event.tokensBefore} tokens)`;
    case "compaction_end":
      return event.error ? `  ⇣ compaction failed: ${oneLine(event.error)}` : "  ⇣ compacted";
    case "run_paused": {
      const line = `  ⏸ paused: ${oneLine(event.message)} (until ${new Date(event.until).toISOString()})`;
      return sessionId === undefined ? line : `${line}\n    go on: ${goOnAfter(event, sessionId)}`;
    }
    case "run_resumed":
      return "  ▶ resumed";
    case "agent_end": {
      const usage = event.usage ? ` · ${formatUsage(event.usage)}` : "";
      return `■ run ${event.status}${event.reason ? ` (${oneLine(event.reason)})` : ""}${usage}`;
    }
    default:
      return undefined;
  }
}

/** The text blocks of a stored tool result. */
function resultText(result: ToolResultMessage): string {
  return result.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

/** The last non-blank line of `text` (a command's exit status, a refusal's reason). */
function lastLine(text: string): string {
  return (
    text
      .split("\n")
      .map((line) => line.trim())
      .filter(Boolean)
      .at(-1) ?? ""
  );
}

/** What the spinner says while waiting after an event. */
function waitingLabel(event: AgentEvent): string {
  switch (event.type) {
    case "turn_start":
      return "waiting for the model";
    case "tool_execution_start":
      return `running ${event.toolName}${event.ranOn && event.ranOn !== "worker" ? ` on ${event.ranOn}` : ""}`;
    case "approval_requested":
      return "waiting for approval";
    case "run_paused":
      return "paused";
    case "compaction_start":
      return "compacting";
    default:
      return "working";
  }
}

/** What the printer is in the middle of writing live: a block of a message, or a tool's output. */
type OpenLive =
  | { kind: "text" | "thinking"; entryId: string; contentIndex: number }
  | { kind: "tool"; toolCallId: string };

/** Characters of a tool's previous output looked for in the next one (which may have lost its head). */
const OVERLAP_CHARS = 200;

/** The part of `next` (a tool's output so far) not printed yet, given what `before` held. */
export function unseenOutput(before: string, next: string): string {
  if (next.startsWith(before)) return next.slice(before.length);
  // The update holds the output's tail only: continue after the end of what was shown.
  const tail = before.slice(-OVERLAP_CHARS);
  const at = tail ? next.lastIndexOf(tail) : -1;
  return at >= 0 ? next.slice(at + tail.length) : `…${next}`;
}

/**
 * Prints events as they arrive: human lines (with a spinner between them) or JSON lines. Live
 * events write the model's text as it comes (thinking dimmed) and a tool's output as it grows.
 */
export class EventPrinter {
  private readonly totals = { cost: 0, tokens: 0 };
  private readonly spinner: Spinner;
  private open?: OpenLive;
  private atLineStart = true;
  /** Assistant entries whose text was shown live. */
  private readonly streamed = new Set<string>();
  /** A running tool's output shown so far, by tool call id. */
  private readonly toolOutput = new Map<string, string>();
  /** Tool calls started and not ended, with the latest attempt whose output was shown (0: none yet). */
  private readonly toolAttempts = new Map<string, number>();
  /** Running tool calls whose runner or worker was lost: their output of attempts up to this one is old. */
  private readonly staleUpTo = new Map<string, number>();
  /** The wait last told, until the run makes progress. */
  private toldWait?: string;

  constructor(
    private readonly output: Output,
    private readonly json: boolean,
    /** The session followed: approval lines then print the commands that answer them. */
    private readonly sessionId?: string,
  ) {
    this.spinner = new Spinner(output);
  }

  waiting(label = "waiting for events"): void {
    if (!this.json) this.spinner.start(label);
  }

  print(event: AgentEvent): void {
    if (this.json) {
      this.output.write(`${JSON.stringify(event)}\n`);
      return;
    }
    this.spinner.stop();
    this.closeLive();
    this.toldWait = undefined;
    const streamed = event.type === "message_end" && this.streamed.delete(event.entryId);
    if (event.type === "tool_execution_start") this.toolAttempts.set(event.toolCallId, 0);
    if (event.type === "tool_execution_end") {
      this.toolAttempts.delete(event.toolCallId);
      this.staleUpTo.delete(event.toolCallId);
      // The live view ends with exactly what was stored: the rest of a command's output (the last
      // batch never comes live), or all of it when the events are read after the fact.
      const shown = this.toolOutput.get(event.toolCallId);
      this.toolOutput.delete(event.toolCallId);
      if (event.result && (shown !== undefined || event.toolName === "bash")) {
        // The live lines were closed above: a newline the shown part lacked is already written.
        const rest = unseenOutput(shown ?? "", resultText(event.result).replace(/\n+$/, "")).replace(
          /^\n/,
          "",
        );
        if (rest) {
          this.writeLive(rest.endsWith("\n") ? rest : `${rest}\n`, "    │ ");
          this.atLineStart = true;
        }
      }
    }
    const line = formatEvent(event, this.totals, streamed, this.sessionId);
    if (line !== undefined) this.output.write(`${line}\n`);
    if (event.type !== "agent_end") this.spinner.start(waitingLabel(event));
  }

  /** Writes a live event (or the API's `waiting`): text as it comes, or one JSON line. */
  live(event: LiveEvent | RunWait): void {
    if (this.json) {
      this.output.write(`${JSON.stringify(event)}\n`);
      return;
    }
    if (event.type === "waiting") {
      this.waitingFor(event);
      return;
    }
    if (event.type === "retry") {
      this.spinner.stop();
      this.closeLive();
      this.output.write(
        `  ↻ model call failed (provider error ${event.providerErrors}/${event.maxAttempts}), retrying in ${event.delayMs} ms: ${oneLine(event.error)}\n`,
      );
      this.spinner.start("waiting to retry");
      return;
    }
    if (event.type === "tool_execution_update") {
      const shownAttempt = this.toolAttempts.get(event.toolCallId) ?? 0;
      const lost = this.staleUpTo.get(event.toolCallId) ?? 0; // its runner or worker was lost up to here
      if (event.attempt <= lost || event.attempt < shownAttempt) return; // old output, read late: not news
      if (shownAttempt > 0 && event.attempt > shownAttempt) {
        this.spinner.stop();
        this.closeLive();
        this.output.write(`  ↻ ${event.toolName} is tried again (attempt ${event.attempt})\n`);
        this.toolOutput.delete(event.toolCallId);
      }
      if (this.toolAttempts.has(event.toolCallId)) this.toolAttempts.set(event.toolCallId, event.attempt);
      const fresh = unseenOutput(this.toolOutput.get(event.toolCallId) ?? "", event.partial);
      this.toolOutput.set(event.toolCallId, event.partial);
      if (!fresh) return;
      this.spinner.stop();
      if (this.open?.kind !== "tool" || this.open.toolCallId !== event.toolCallId) {
        this.closeLive();
        this.open = { kind: "tool", toolCallId: event.toolCallId };
      }
      this.writeLive(fresh, "    │ ");
      return;
    }
    const delta = event.assistantMessageEvent;
    if (delta.type === "reset") {
      this.spinner.stop();
      this.closeLive();
      this.streamed.delete(event.entryId);
      this.output.write(
        `  ↻ the model call is retried (attempt ${event.attempt}); its answer starts again\n`,
      );
      return;
    }
    if (delta.type === "cut") {
      // The rest comes with message_end, which then shows the message's preview.
      this.spinner.stop();
      this.closeLive();
      this.streamed.delete(event.entryId);
      this.output.write("  … (too long to stream; the whole message follows)\n");
      return;
    }
    // Tool-call arguments are shown when the tool starts.
    if (delta.type === "toolcall_delta") return;
    this.spinner.stop();
    const kind = delta.type === "text_delta" ? "text" : "thinking";
    const open = this.open;
    if (open?.kind !== kind || open.entryId !== event.entryId || open.contentIndex !== delta.contentIndex) {
      this.closeLive();
      this.open = { kind, entryId: event.entryId, contentIndex: delta.contentIndex };
      this.output.write(kind === "text" ? "  ● " : this.dim("  ∴ "));
      this.atLineStart = false;
    }
    this.streamed.add(event.entryId);
    this.writeLive(delta.delta, "    ", kind === "thinking");
  }

  /**
   * Says what the run waits for, once per wait until the run makes progress; a lost runner or
   * worker makes the running calls' output of its attempts old (it may still arrive, late).
   */
  private waitingFor(wait: RunWait): void {
    const lost = wait.staleUpTo ?? 0;
    for (const id of this.toolAttempts.keys())
      this.staleUpTo.set(id, Math.max(this.staleUpTo.get(id) ?? 0, lost));
    if (wait.message === this.toldWait) return;
    this.toldWait = wait.message;
    this.spinner.stop();
    this.closeLive();
    this.output.write(`  … ${wait.message}\n`);
    this.spinner.start(wait.message.split(":")[0] ?? wait.message);
  }

  /** Writes `text`, starting each new line with `indent`. */
  private writeLive(text: string, indent: string, dim = false): void {
    let out = "";
    for (const char of text) {
      if (this.atLineStart) out += indent;
      out += char;
      this.atLineStart = char === "\n";
    }
    this.output.write(dim ? this.dim(out) : out);
  }

  /** Ends what is being written live with a line break. */
  private closeLive(): void {
    if (!this.open) return;
    if (!this.atLineStart) this.output.write("\n");
    this.atLineStart = true;
    this.open = undefined;
  }

  private dim(text: string): string {
    return this.output.isTTY ? `\x1b[2m${text}\x1b[22m` : text;
  }

  /** A line of commentary between events (human output only; the spinner resumes after it). */
  note(text: string): void {
    if (this.json) return;
    this.spinner.stop();
    this.closeLive();
    this.output.write(`${text}\n`);
    this.spinner.start("working");
  }

  done(): void {
    this.spinner.stop();
    this.closeLive();
  }
}
