/**
 * A scripted turn made into a reply with fixed ids, usage and stop reason (the same for every
 * wire format), and the pieces each format's encoder shares.
 */
import { createHash } from "node:crypto";
import type { NormalizedRequest, Turn, TurnUsage } from "./types";

const CHARS_PER_TOKEN = 4;
const ID_HASH_CHARS = 16;

export interface SseEvent {
  /** SSE `event:` name; omitted for Chat Completions. */
  event?: string;
  data: unknown;
  /** Counts as one generated token for pacing. */
  isDelta?: boolean;
}

export interface ReplyToolCall {
  /** Chat `id` and Responses `call_id`. */
  callId: string;
  /** Responses item `id`. */
  itemId: string;
  /** Anthropic `tool_use` id. */
  toolUseId: string;
  name: string;
  argumentsJson: string;
}

/** A turn with ids, usage and stop reason fixed; the same for every wire. */
export interface Reply {
  id: string;
  model: string;
  thinking?: string;
  thinkingSignature: string;
  text?: string;
  toolCalls: ReplyToolCall[];
  usage: TurnUsage;
  stop: "stop" | "length" | "refusal" | "toolUse";
}

function hash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, ID_HASH_CHARS);
}

function estimateTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/**
 * Deterministic: ids derive from scenario, first user message and turn index. Scripted
 * thinking is sent only when the request asked for thinking, as real providers do.
 */
export function buildReply(
  request: NormalizedRequest,
  scripted: Turn,
  scenario: string,
  turnIndex: number,
): Reply {
  const { thinking: scriptedThinking, ...withoutThinking } = scripted;
  const turn: Turn = request.thinking && scriptedThinking ? scripted : withoutThinking;
  const firstUser = request.messages.find((message) => message.role === "user")?.text ?? "";
  const base = hash(`${scenario}\0${firstUser}\0${turnIndex}`);
  const toolCalls = (turn.toolCalls ?? []).map((call, index) => ({
    callId: call.id ?? `call_${base}_${index}`,
    itemId: `fc_${base}_${index}`,
    toolUseId: call.id ?? `toolu_${base}_${index}`,
    name: call.name,
    argumentsJson: JSON.stringify(call.arguments),
  }));
  const outputChars =
    (turn.text?.length ?? 0) +
    (turn.thinking?.length ?? 0) +
    toolCalls.reduce((sum, call) => sum + call.name.length + call.argumentsJson.length, 0);
  const inputChars = JSON.stringify([request.system, request.messages, request.tools]).length;
  return {
    id: base,
    model: request.model,
    ...(turn.thinking ? { thinking: turn.thinking } : {}),
    thinkingSignature: `sig_${hash(turn.thinking ?? "")}`,
    ...(turn.text ? { text: turn.text } : {}),
    toolCalls,
    usage: {
      input: turn.usage?.input ?? estimateTokens(inputChars),
      output: turn.usage?.output ?? Math.max(1, estimateTokens(outputChars)),
      cacheRead: turn.usage?.cacheRead ?? 0,
      cacheWrite: turn.usage?.cacheWrite ?? 0,
    },
    stop:
      turn.stopReason && turn.stopReason !== "stop"
        ? turn.stopReason
        : toolCalls.length > 0
          ? "toolUse"
          : "stop",
  };
}

/** Splits text into word-sized deltas (one pacing unit each). */
export function chunks(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/** Now in Unix seconds, as the OpenAI formats stamp objects. */
export const created = () => Math.floor(Date.now() / 1000);
