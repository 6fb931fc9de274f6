/** A reply as the OpenAI Responses API sends it: a `response` object, or its typed event stream. */
import { chunks, created, type Reply, type ReplyToolCall, type SseEvent } from "./reply";

function responsesUsage(reply: Reply) {
  const input = reply.usage.input + reply.usage.cacheRead;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: reply.usage.cacheRead },
    output_tokens: reply.usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + reply.usage.output,
  };
}

function reasoningItem(reply: Reply) {
  return {
    id: `rs_${reply.id}`,
    type: "reasoning",
    summary: [{ type: "summary_text", text: reply.thinking ?? "" }],
    encrypted_content: Buffer.from(reply.thinking ?? "").toString("base64"),
  };
}

function messageItem(reply: Reply, status: "in_progress" | "completed") {
  const content =
    status === "completed" ? [{ type: "output_text", text: reply.text ?? "", annotations: [] }] : [];
  return { id: `msg_${reply.id}`, type: "message", role: "assistant", status, content };
}

function functionCallItem(call: ReplyToolCall, status: "in_progress" | "completed") {
  return {
    id: call.itemId,
    type: "function_call",
    call_id: call.callId,
    name: call.name,
    arguments: status === "completed" ? call.argumentsJson : "",
    status,
  };
}

function responseObject(reply: Reply, status: "in_progress" | "completed" | "incomplete", output: unknown[]) {
  return {
    id: `resp_${reply.id}`,
    object: "response",
    created_at: created(),
    status,
    model: reply.model,
    output,
    error: null,
    incomplete_details:
      status === "incomplete"
        ? { reason: reply.stop === "refusal" ? "content_filter" : "max_output_tokens" }
        : null,
    usage: status === "in_progress" ? null : responsesUsage(reply),
  };
}

function responsesOutput(reply: Reply): unknown[] {
  return [
    ...(reply.thinking ? [reasoningItem(reply)] : []),
    ...(reply.text ? [messageItem(reply, "completed")] : []),
    ...reply.toolCalls.map((call) => functionCallItem(call, "completed")),
  ];
}

const finalStatus = (reply: Reply) =>
  reply.stop === "length" || reply.stop === "refusal" ? "incomplete" : "completed";

export function responsesJson(reply: Reply) {
  return responseObject(reply, finalStatus(reply), responsesOutput(reply));
}

export function responsesEvents(reply: Reply): SseEvent[] {
  const events: SseEvent[] = [];
  const emit = (type: string, payload: object, isDelta = false) =>
    events.push({ event: type, data: { type, sequence_number: events.length, ...payload }, isDelta });
  emit("response.created", { response: responseObject(reply, "in_progress", []) });
  emit("response.in_progress", { response: responseObject(reply, "in_progress", []) });
  let outputIndex = 0;
  if (reply.thinking) {
    const item = reasoningItem(reply);
    emit("response.output_item.added", { output_index: outputIndex, item: { ...item, summary: [] } });
    const part = { item_id: item.id, output_index: outputIndex, summary_index: 0 };
    emit("response.reasoning_summary_part.added", { ...part, part: { type: "summary_text", text: "" } });
    for (const delta of chunks(reply.thinking))
      emit("response.reasoning_summary_text.delta", { ...part, delta }, true);
    emit("response.reasoning_summary_text.done", { ...part, text: reply.thinking });
    emit("response.reasoning_summary_part.done", {
      ...part,
      part: { type: "summary_text", text: reply.thinking },
    });
    emit("response.output_item.done", { output_index: outputIndex, item });
    outputIndex += 1;
  }
  if (reply.text) {
    const itemId = `msg_${reply.id}`;
    const part = { item_id: itemId, output_index: outputIndex, content_index: 0 };
    emit("response.output_item.added", {
      output_index: outputIndex,
      item: messageItem(reply, "in_progress"),
    });
    emit("response.content_part.added", {
      ...part,
      part: { type: "output_text", text: "", annotations: [] },
    });
    for (const delta of chunks(reply.text))
      emit("response.output_text.delta", { ...part, delta, logprobs: [] }, true);
    emit("response.output_text.done", { ...part, text: reply.text, logprobs: [] });
    emit("response.content_part.done", {
      ...part,
      part: { type: "output_text", text: reply.text, annotations: [] },
    });
    emit("response.output_item.done", { output_index: outputIndex, item: messageItem(reply, "completed") });
    outputIndex += 1;
  }
  for (const call of reply.toolCalls) {
    emit("response.output_item.added", {
      output_index: outputIndex,
      item: functionCallItem(call, "in_progress"),
    });
    for (const delta of chunks(call.argumentsJson)) {
      emit(
        "response.function_call_arguments.delta",
        { item_id: call.itemId, output_index: outputIndex, delta },
        true,
      );
    }
    emit("response.function_call_arguments.done", {
      item_id: call.itemId,
      output_index: outputIndex,
      arguments: call.argumentsJson,
    });
    emit("response.output_item.done", {
      output_index: outputIndex,
      item: functionCallItem(call, "completed"),
    });
    outputIndex += 1;
  }
  const status = finalStatus(reply);
  emit(`response.${status}`, { response: responseObject(reply, status, responsesOutput(reply)) });
  return events;
}
