/** A reply as Anthropic Messages sends it: a `message` body, or its typed event stream. */
import { chunks, type Reply, type SseEvent } from "./reply";

const ANTHROPIC_STOP = {
  stop: "end_turn",
  length: "max_tokens",
  refusal: "refusal",
  toolUse: "tool_use",
} as const;

function anthropicUsage(reply: Reply, output: number) {
  return {
    input_tokens: reply.usage.input,
    output_tokens: output,
    cache_read_input_tokens: reply.usage.cacheRead,
    cache_creation_input_tokens: reply.usage.cacheWrite,
  };
}

function anthropicBlocks(reply: Reply) {
  return [
    ...(reply.thinking
      ? [{ type: "thinking", thinking: reply.thinking, signature: reply.thinkingSignature }]
      : []),
    ...(reply.text ? [{ type: "text", text: reply.text }] : []),
    ...reply.toolCalls.map((call) => ({
      type: "tool_use",
      id: call.toolUseId,
      name: call.name,
      input: JSON.parse(call.argumentsJson),
    })),
  ];
}

function anthropicMessage(reply: Reply, content: unknown[], stop: string | null, output: number) {
  return {
    id: `msg_${reply.id}`,
    type: "message",
    role: "assistant",
    model: reply.model,
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: anthropicUsage(reply, output),
  };
}

export function anthropicJson(reply: Reply) {
  return anthropicMessage(reply, anthropicBlocks(reply), ANTHROPIC_STOP[reply.stop], reply.usage.output);
}

export function anthropicEvents(reply: Reply): SseEvent[] {
  const events: SseEvent[] = [];
  const emit = (type: string, payload: object, isDelta = false) =>
    events.push({ event: type, data: { type, ...payload }, isDelta });
  emit("message_start", { message: anthropicMessage(reply, [], null, 1) });
  anthropicBlocks(reply).forEach((block, index) => {
    if (block.type === "thinking") {
      emit("content_block_start", {
        index,
        content_block: { type: "thinking", thinking: "", signature: "" },
      });
      for (const thinking of chunks(reply.thinking ?? "")) {
        emit("content_block_delta", { index, delta: { type: "thinking_delta", thinking } }, true);
      }
      emit("content_block_delta", {
        index,
        delta: { type: "signature_delta", signature: reply.thinkingSignature },
      });
    } else if (block.type === "text") {
      emit("content_block_start", { index, content_block: { type: "text", text: "" } });
      for (const text of chunks(reply.text ?? ""))
        emit("content_block_delta", { index, delta: { type: "text_delta", text } }, true);
    } else if (block.type === "tool_use" && "id" in block) {
      emit("content_block_start", {
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
      });
      for (const partial_json of chunks(JSON.stringify(block.input))) {
        emit("content_block_delta", { index, delta: { type: "input_json_delta", partial_json } }, true);
      }
    }
    emit("content_block_stop", { index });
  });
  emit("message_delta", {
    delta: { stop_reason: ANTHROPIC_STOP[reply.stop], stop_sequence: null },
    usage: anthropicUsage(reply, reply.usage.output),
  });
  emit("message_stop", {});
  return events;
}
