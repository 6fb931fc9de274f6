/** A reply as OpenAI Chat Completions sends it: a `chat.completion` body, or its chunk stream. */
import { chunks, created, type Reply, type SseEvent } from "./reply";

const CHAT_FINISH = {
  stop: "stop",
  length: "length",
  refusal: "content_filter",
  toolUse: "tool_calls",
} as const;

function chatUsage(reply: Reply) {
  const prompt = reply.usage.input + reply.usage.cacheRead;
  return {
    prompt_tokens: prompt,
    completion_tokens: reply.usage.output,
    total_tokens: prompt + reply.usage.output,
    prompt_tokens_details: { cached_tokens: reply.usage.cacheRead },
  };
}

function chatToolCalls(reply: Reply) {
  return reply.toolCalls.map((call) => ({
    id: call.callId,
    type: "function",
    function: { name: call.name, arguments: call.argumentsJson },
  }));
}

export function chatJson(reply: Reply) {
  return {
    id: `chatcmpl-${reply.id}`,
    object: "chat.completion",
    created: created(),
    model: reply.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: reply.text ?? null,
          refusal: null,
          ...(reply.thinking ? { reasoning_content: reply.thinking } : {}),
          ...(reply.toolCalls.length > 0 ? { tool_calls: chatToolCalls(reply) } : {}),
        },
        finish_reason: CHAT_FINISH[reply.stop],
        logprobs: null,
      },
    ],
    usage: chatUsage(reply),
  };
}

export function chatEvents(reply: Reply): SseEvent[] {
  const chunk = (delta: object, finishReason: string | null = null, isDelta = true): SseEvent => ({
    data: {
      id: `chatcmpl-${reply.id}`,
      object: "chat.completion.chunk",
      created: created(),
      model: reply.model,
      choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
    },
    isDelta,
  });
  const events: SseEvent[] = [chunk({ role: "assistant", content: "" }, null, false)];
  for (const part of chunks(reply.thinking ?? "")) events.push(chunk({ reasoning_content: part }));
  for (const part of chunks(reply.text ?? "")) events.push(chunk({ content: part }));
  reply.toolCalls.forEach((call, index) => {
    events.push(
      chunk({
        tool_calls: [
          { index, id: call.callId, type: "function", function: { name: call.name, arguments: "" } },
        ],
      }),
    );
    for (const part of chunks(call.argumentsJson)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
    }
  });
  events.push(chunk({}, CHAT_FINISH[reply.stop], false));
  events.push({
    data: {
      id: `chatcmpl-${reply.id}`,
      object: "chat.completion.chunk",
      created: created(),
      model: reply.model,
      choices: [],
      usage: chatUsage(reply),
    },
  });
  events.push({ data: "[DONE]" });
  return events;
}
