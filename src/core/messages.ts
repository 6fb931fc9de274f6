/**
 * The canonical message model: one zod schema per shape, types inferred from it.
 *
 * Shapes follow the pi session format (`@mariozechner/pi-ai` messages) so that pi files load
 * without conversion. Content blocks are the single source of truth: tool calls are read from
 * an assistant message's content, never from a separate list.
 */
import { z } from "zod";

const TextBlockSchema = z.object({
  type: z.literal("text"),
  text: z.string(),
  /** Provider-opaque signature of a text block (OpenAI Responses item id); replayed as is. */
  textSignature: z.string().optional(),
});

const ThinkingBlockSchema = z.object({
  type: z.literal("thinking"),
  thinking: z.string(),
  /** Anthropic signature, or the encrypted payload of redacted thinking; replayed as is. */
  thinkingSignature: z.string().optional(),
  /** True when the provider redacted the thinking; the payload lives in `thinkingSignature`. */
  redacted: z.boolean().optional(),
});

const ImageBlockSchema = z.object({
  type: z.literal("image"),
  /** Base64 without a data: prefix. */
  data: z.string(),
  mimeType: z.string(),
});

const ToolCallBlockSchema = z.object({
  type: z.literal("toolCall"),
  id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()),
  thoughtSignature: z.string().optional(),
});

export const UserContentSchema = z.union([
  z.string(),
  z.array(z.discriminatedUnion("type", [TextBlockSchema, ImageBlockSchema])),
]);
const AssistantBlockSchema = z.discriminatedUnion("type", [
  TextBlockSchema,
  ThinkingBlockSchema,
  ToolCallBlockSchema,
]);
export const ToolResultBlockSchema = z.discriminatedUnion("type", [TextBlockSchema, ImageBlockSchema]);

export const CostSchema = z.object({
  input: z.number(),
  output: z.number(),
  cacheRead: z.number(),
  cacheWrite: z.number(),
  total: z.number(),
  /** The model has no known prices: the figures are 0 because cost was not computed, not because it was free. */
  unpriced: z.literal(true).optional(),
});

export const UsageSchema = z.object({
  input: z.number(),
  output: z.number(),
  cacheRead: z.number(),
  cacheWrite: z.number(),
  totalTokens: z.number(),
  cost: CostSchema,
  /**
   * The server reported no usage (some OpenAI-compatible servers omit it when streaming): the
   * counts are Keel's estimate (characters / 4, see core/tokens) and the cost is priced from it.
   */
  estimated: z.literal(true).optional(),
});

const StopReasonSchema = z.enum(["stop", "length", "toolUse", "error", "aborted"]);

const UserMessageSchema = z.object({
  role: z.literal("user"),
  content: UserContentSchema,
  /** Epoch milliseconds. */
  timestamp: z.number(),
});

const AssistantMessageSchema = z.object({
  role: z.literal("assistant"),
  content: z.array(AssistantBlockSchema),
  /** Wire API used: "openai-completions" | "openai-responses" | "anthropic-messages" | other. */
  api: z.string(),
  provider: z.string(),
  model: z.string(),
  responseId: z.string().optional(),
  usage: UsageSchema,
  stopReason: StopReasonSchema,
  errorMessage: z.string().optional(),
  timestamp: z.number(),
});

const ToolResultMessageSchema = z.object({
  role: z.literal("toolResult"),
  toolCallId: z.string().min(1),
  toolName: z.string(),
  content: z.array(ToolResultBlockSchema),
  details: z.unknown().optional(),
  isError: z.boolean(),
  timestamp: z.number(),
});

/** A message an LLM can be sent. */
const MessageSchema = z.discriminatedUnion("role", [
  UserMessageSchema,
  AssistantMessageSchema,
  ToolResultMessageSchema,
]);

export type TextBlock = z.infer<typeof TextBlockSchema>;
export type ThinkingBlock = z.infer<typeof ThinkingBlockSchema>;
export type ImageBlock = z.infer<typeof ImageBlockSchema>;
export type ToolCallBlock = z.infer<typeof ToolCallBlockSchema>;
export type AssistantBlock = z.infer<typeof AssistantBlockSchema>;
export type Cost = z.infer<typeof CostSchema>;
export type Usage = z.infer<typeof UsageSchema>;
export type StopReason = z.infer<typeof StopReasonSchema>;
export type UserMessage = z.infer<typeof UserMessageSchema>;
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>;
export type ToolResultMessage = z.infer<typeof ToolResultMessageSchema>;
export type Message = z.infer<typeof MessageSchema>;

/** A tool as offered to a model: name, description and a JSON Schema for its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema (draft 2020-12 / OpenAPI-compatible object schema). */
  parameters: Record<string, unknown>;
}

/** What a provider is asked to continue. */
export interface LlmContext {
  systemPrompt?: string;
  messages: Message[];
  tools?: ToolSpec[];
}

/** The tool calls of an assistant message, read from its content (the only source). */
export function toolCallsOf(message: AssistantMessage): ToolCallBlock[] {
  return message.content.filter((block): block is ToolCallBlock => block.type === "toolCall");
}

// ---------------------------------------------------------------------------------------------
// Agent messages: the extra roles pi stores in session files next to LLM messages. They never
// reach a provider as such; `convertToLlm` turns them into user messages exactly as pi does.
// ---------------------------------------------------------------------------------------------

/** A shell command the user ran directly (pi's `!` command), with its captured output. */
const BashExecutionMessageSchema = z.object({
  role: z.literal("bashExecution"),
  command: z.string(),
  output: z.string(),
  /** Missing (`undefined`) or null when the process did not exit normally. */
  exitCode: z.number().nullable().optional(),
  cancelled: z.boolean(),
  truncated: z.boolean(),
  fullOutputPath: z.string().optional(),
  timestamp: z.number(),
  /** True for pi's `!!` prefix: kept in the session, never sent to the model. */
  excludeFromContext: z.boolean().optional(),
});

/** A message injected by an extension (pi's `sendMessage`); reaches the model as a user message. */
const CustomMessageSchema = z.object({
  role: z.literal("custom"),
  customType: z.string(),
  content: UserContentSchema,
  display: z.boolean(),
  details: z.unknown().optional(),
  timestamp: z.number(),
});

const BranchSummaryMessageSchema = z.object({
  role: z.literal("branchSummary"),
  summary: z.string(),
  fromId: z.string(),
  timestamp: z.number(),
});

const CompactionSummaryMessageSchema = z.object({
  role: z.literal("compactionSummary"),
  summary: z.string(),
  tokensBefore: z.number(),
  timestamp: z.number(),
});

/** Anything a session `message` entry may hold: an LLM message or one of pi's agent roles. */
export const AgentMessageSchema = z.discriminatedUnion("role", [
  UserMessageSchema,
  AssistantMessageSchema,
  ToolResultMessageSchema,
  BashExecutionMessageSchema,
  CustomMessageSchema,
  BranchSummaryMessageSchema,
  CompactionSummaryMessageSchema,
]);

type BashExecutionMessage = z.infer<typeof BashExecutionMessageSchema>;
export type AgentMessage = z.infer<typeof AgentMessageSchema>;

/** Text pi wraps around a compaction summary when it becomes a user message. */
export const COMPACTION_SUMMARY_PREFIX =
  "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const COMPACTION_SUMMARY_SUFFIX = "\n</summary>";
/** Text pi wraps around a branch summary when it becomes a user message. */
const BRANCH_SUMMARY_PREFIX =
  "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const BRANCH_SUMMARY_SUFFIX = "</summary>";

/** The user-message text pi sends for a bash execution (same wording, byte for byte). */
function bashExecutionToText(message: BashExecutionMessage): string {
  let text = `Ran \`${message.command}\`\n`;
  text += message.output ? `\`\`\`\n${message.output}\n\`\`\`` : "(no output)";
  if (message.cancelled) {
    text += "\n\n(command cancelled)";
  } else if (message.exitCode !== null && message.exitCode !== undefined && message.exitCode !== 0) {
    text += `\n\nCommand exited with code ${message.exitCode}`;
  }
  if (message.truncated && message.fullOutputPath) {
    text += `\n\n[Output truncated. Full output: ${message.fullOutputPath}]`;
  }
  return text;
}

/**
 * The LLM messages for a list of agent messages, converted exactly as pi's `convertToLlm`:
 * bash executions, custom messages and summaries become user messages (bash executions marked
 * `excludeFromContext` are dropped); user / assistant / toolResult pass through unchanged.
 */
export function convertToLlm(messages: readonly AgentMessage[]): Message[] {
  const out: Message[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "bashExecution":
        if (message.excludeFromContext) break;
        out.push({
          role: "user",
          content: [{ type: "text", text: bashExecutionToText(message) }],
          timestamp: message.timestamp,
        });
        break;
      case "custom":
        out.push({
          role: "user",
          content:
            typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content,
          timestamp: message.timestamp,
        });
        break;
      case "branchSummary":
        out.push(
          summaryUserMessage(
            BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX,
            message.timestamp,
          ),
        );
        break;
      case "compactionSummary":
        out.push(
          summaryUserMessage(
            COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX,
            message.timestamp,
          ),
        );
        break;
      default:
        out.push(message);
    }
  }
  return out;
}

function summaryUserMessage(text: string, timestamp: number): UserMessage {
  return { role: "user", content: [{ type: "text", text }], timestamp };
}
