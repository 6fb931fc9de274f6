/**
 * Token estimation as pi does it: characters / 4 (rounded up), images counted as a fixed
 * number of characters, and the last real usage figure preferred over estimates.
 */
import type { AgentMessage, Usage } from "./messages";

/** Characters per token of the heuristic; overestimates tokens for typical text and code. */
export const CHARS_PER_TOKEN = 4;
/** Characters an image counts as (1200 tokens), as pi counts them. */
const IMAGE_CHARS = 4800;

/**
 * Estimated tokens of one message (pi's `estimateTokens`): text, thinking, tool-call name +
 * JSON arguments; images only in tool results and custom messages, as pi counts them.
 */
export function estimateTokens(message: AgentMessage): number {
  let chars = 0;
  switch (message.role) {
    case "user":
      if (typeof message.content === "string") chars = message.content.length;
      else for (const block of message.content) if (block.type === "text") chars += block.text.length;
      break;
    case "assistant":
      for (const block of message.content) {
        if (block.type === "text") chars += block.text.length;
        else if (block.type === "thinking") chars += block.thinking.length;
        else chars += block.name.length + JSON.stringify(block.arguments).length;
      }
      break;
    case "custom":
    case "toolResult":
      if (typeof message.content === "string") chars = message.content.length;
      else {
        for (const block of message.content) {
          if (block.type === "text") chars += block.text.length;
          else chars += IMAGE_CHARS;
        }
      }
      break;
    case "bashExecution":
      chars = message.command.length + message.output.length;
      break;
    case "branchSummary":
    case "compactionSummary":
      chars = message.summary.length;
      break;
  }
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** Context size a usage figure reports: `totalTokens`, else the sum of its parts. */
function calculateContextTokens(usage: Usage): number {
  return usage.totalTokens || usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
}

/** Usage of an assistant message that completed (aborted / error responses carry no valid usage). */
function validAssistantUsage(message: AgentMessage): Usage | undefined {
  if (message.role !== "assistant" || message.stopReason === "aborted" || message.stopReason === "error") {
    return undefined;
  }
  return message.usage;
}

export interface ContextTokenEstimate {
  tokens: number;
  /** Tokens reported by the last valid usage (0 when none). */
  usageTokens: number;
  /** Estimated tokens of the messages after that usage (all messages when none). */
  trailingTokens: number;
  /** Index of the message whose usage was used, null when none. */
  lastUsageIndex: number | null;
}

/** Context size: the last real usage figure plus estimates for what came after it. */
export function estimateContextTokens(messages: readonly AgentMessage[]): ContextTokenEstimate {
  let lastUsageIndex: number | null = null;
  let usageTokens = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const usage = validAssistantUsage(messages[i]!);
    if (usage) {
      lastUsageIndex = i;
      usageTokens = calculateContextTokens(usage);
      break;
    }
  }
  let trailingTokens = 0;
  for (let i = lastUsageIndex === null ? 0 : lastUsageIndex + 1; i < messages.length; i++) {
    trailingTokens += estimateTokens(messages[i]!);
  }
  return { tokens: usageTokens + trailingTokens, usageTokens, trailingTokens, lastUsageIndex };
}

/** Whether a context of `contextTokens` leaves less than `reserveTokens` of `contextWindow` free. */
export function shouldCompact(contextTokens: number, contextWindow: number, reserveTokens: number): boolean {
  return contextTokens > contextWindow - reserveTokens;
}
