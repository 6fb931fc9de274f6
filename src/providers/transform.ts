/**
 * Provider-independent preparation of a history before it is converted to a wire format.
 */
import type { AssistantBlock, AssistantMessage, Message, ToolCallBlock } from "../core/messages";
import type { ModelInfo } from "./types";

const MISSING_RESULT_TEXT = "No result provided";
const IMAGE_OMITTED_TEXT = "(image omitted: model does not support images)";

export function isSameModel(message: AssistantMessage, model: ModelInfo): boolean {
  return message.provider === model.provider && message.api === model.api && message.model === model.id;
}

function adaptAssistantBlocks(message: AssistantMessage, model: ModelInfo): AssistantBlock[] {
  if (isSameModel(message, model)) return message.content;
  // Signatures and redacted payloads only verify on the model that produced them: foreign
  // thinking becomes plain text, redacted thinking is dropped.
  return message.content.flatMap((block): AssistantBlock[] => {
    if (block.type === "thinking") {
      if (block.redacted || block.thinking.trim() === "") return [];
      return [{ type: "text", text: block.thinking }];
    }
    if (block.type === "text") return [{ type: "text", text: block.text }];
    const { thoughtSignature: _dropped, ...call } = block;
    return [call];
  });
}

function withoutImages(message: Message): Message {
  if (message.role === "assistant" || typeof message.content === "string") return message;
  if (!message.content.some((block) => block.type === "image")) return message;
  const content = message.content.map((block) =>
    block.type === "image" ? { type: "text" as const, text: IMAGE_OMITTED_TEXT } : block,
  );
  return { ...message, content } as Message;
}

/**
 * Returns the history a provider should send:
 * - failed or aborted assistant turns are left out (they are incomplete and may not replay);
 * - assistant content from another model loses signatures (see above);
 * - images become a placeholder when the model takes no image input;
 * - tool calls left without a result get a synthetic error result, because every provider
 *   rejects a history with an unanswered tool call.
 */
export function prepareMessages(messages: Message[], model: ModelInfo): Message[] {
  const result: Message[] = [];
  let pending: ToolCallBlock[] = [];
  const answered = new Set<string>();
  const closePendingCalls = () => {
    for (const call of pending) {
      if (answered.has(call.id)) continue;
      result.push({
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: "text", text: MISSING_RESULT_TEXT }],
        isError: true,
        timestamp: 0,
      });
    }
    pending = [];
    answered.clear();
  };

  for (const original of messages) {
    const message = model.imageInput ? original : withoutImages(original);
    if (message.role === "assistant") {
      closePendingCalls();
      if (message.stopReason === "error" || message.stopReason === "aborted") continue;
      const adapted = { ...message, content: adaptAssistantBlocks(message, model) };
      pending = adapted.content.filter((block): block is ToolCallBlock => block.type === "toolCall");
      result.push(adapted);
    } else if (message.role === "toolResult") {
      answered.add(message.toolCallId);
      result.push(message);
    } else {
      closePendingCalls();
      result.push(message);
    }
  }
  closePendingCalls();
  return result;
}

/** Text of tool-result or user content blocks, images left out. */
export function textOf(content: string | ReadonlyArray<{ type: string; text?: string }>): string {
  if (typeof content === "string") return content;
  return content
    .filter((block) => block.type === "text")
    .map((block) => block.text ?? "")
    .join("\n");
}
