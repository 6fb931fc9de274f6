/**
 * Human output of a run's events: one line per thing that happened (turns, messages, tool calls,
 * tokens and cost), and a spinner while a person waits on a terminal. Pure formatting except for
 * `EventPrinter` and `Spinner`, which write.
 */
import type { AgentEvent } from "../core/events";
import type { AgentMessage, Usage } from "../core/messages";

const PREVIEW_CHARS = 160;
const SPINNER_FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const SPINNER_INTERVAL_MS = 100;

export interface Output {
  write(text: string): void;
  /** True when a person is watching (stdout is a terminal): spinners are drawn. */
  isTTY: boolean;
}

export const stdoutOutput: Output = {
  write: (text) => process.stdout.write(text),
  isTTY: Boolean(process.stdout.isTTY),
};

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

/** The line(s) shown for an event, or undefined for events a person does not need to see. */
export function formatEvent(event: AgentEvent, totals: { cost: number; tokens: number }): string | undefined {
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
      if (thinking?.type === "thinking" && thinking.thinking) lines.push(`  ∴ ${oneLine(thinking.thinking)}`);
      const text = textOf(message);
      if (text) lines.push(`  ● ${oneLine(text, 400)}`);
      lines.push(`    ${formatUsage(message.usage)} (run total ${formatUsd(totals.cost)})`);
      return lines.join("\n");
    }
    case "tool_execution_start":
      return `  ⚙ ${event.toolName}${formatArgs(event.args)}`;
    case "tool_execution_end":
      return `  ${event.isError ? "✗" : "✓"} ${event.toolName} ${event.state}`;
    case "retry":
      return `  ↻ retry ${event.attempt}/${event.maxAttempts} in ${event.delayMs} ms: ${oneLine(event.error)}`;
    case "approval_requested":
      return `  ? ${event.toolName} waits for approval (tool call ${event.toolCallId})${formatArgs(event.args)}`;
    case "approval_resolved":
      return `  ! tool call ${event.toolCallId} ${approvalOutcome(event.decision)}`;
    case "compaction_start":
      return `  ⇣ compacting (${event.reason}, ${event.tokensBefore} tokens)`;
    case "compaction_end":
      return event.error ? `  ⇣ compaction failed: ${oneLine(event.error)}` : "  ⇣ compacted";
    case "agent_end": {
      const usage = event.usage ? ` · ${formatUsage(event.usage)}` : "";
      return `■ run ${event.status}${event.reason ? ` (${oneLine(event.reason)})` : ""}${usage}`;
    }
    default:
      return undefined;
  }
}

/** What the spinner says while waiting after an event. */
function waitingLabel(event: AgentEvent): string {
  switch (event.type) {
    case "turn_start":
      return "waiting for the model";
    case "tool_execution_start":
      return `running ${event.toolName}`;
    case "approval_requested":
      return "waiting for approval";
    case "compaction_start":
      return "compacting";
    default:
      return "working";
  }
}

/** A one-line spinner on a terminal; does nothing elsewhere. */
export class Spinner {
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private label = "";

  constructor(private readonly output: Output) {}

  start(label: string): void {
    if (!this.output.isTTY) return;
    this.label = label;
    if (this.timer) return;
    this.timer = setInterval(() => this.draw(), SPINNER_INTERVAL_MS);
    this.draw();
  }

  /** Clears the spinner line so that other output can be written. */
  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.output.write("\r\x1b[K");
  }

  private draw(): void {
    this.frame = (this.frame + 1) % SPINNER_FRAMES.length;
    this.output.write(`\r\x1b[K${SPINNER_FRAMES[this.frame]} ${this.label}`);
  }
}

/** Prints events as they arrive: human lines (with a spinner between them) or JSON lines. */
export class EventPrinter {
  private readonly totals = { cost: 0, tokens: 0 };
  private readonly spinner: Spinner;

  constructor(
    private readonly output: Output,
    private readonly json: boolean,
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
    const line = formatEvent(event, this.totals);
    if (line !== undefined) this.output.write(`${line}\n`);
    if (event.type !== "agent_end") this.spinner.start(waitingLabel(event));
  }

  /** A line of commentary between events (human output only; the spinner resumes after it). */
  note(text: string): void {
    if (this.json) return;
    this.spinner.stop();
    this.output.write(`${text}\n`);
    this.spinner.start("working");
  }

  done(): void {
    this.spinner.stop();
  }
}
