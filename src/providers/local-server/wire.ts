/**
 * Encodes a scripted reply in the wire format a request came in: a whole JSON body, or the exact
 * SSE event sequence the official SDKs parse (one encoder per format, `encode-*.ts`), and error
 * bodies in each format's own shape.
 */
import { anthropicEvents, anthropicJson } from "./encode-anthropic-messages";
import { chatEvents, chatJson } from "./encode-openai-completions";
import { responsesEvents, responsesJson } from "./encode-openai-responses";
import type { Reply, SseEvent } from "./reply";
import type { WireApi } from "./types";

export function encodeJson(api: WireApi, reply: Reply): unknown {
  if (api === "openai-completions") return chatJson(reply);
  if (api === "openai-responses") return responsesJson(reply);
  return anthropicJson(reply);
}

export function encodeEvents(api: WireApi, reply: Reply): SseEvent[] {
  if (api === "openai-completions") return chatEvents(reply);
  if (api === "openai-responses") return responsesEvents(reply);
  return anthropicEvents(reply);
}

export function formatSse(event: SseEvent): string {
  const data = typeof event.data === "string" ? event.data : JSON.stringify(event.data);
  return `${event.event ? `event: ${event.event}\n` : ""}data: ${data}\n\n`;
}

// ---------------------------------------------------------------- errors

export interface ErrorReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** An error body in the wire's own shape (OpenAI `{error: …}`, Anthropic `{type: "error", error: …}`). */
export function errorReply(
  api: WireApi,
  status: number,
  type: string,
  message: string,
  code?: string,
  headers?: Record<string, string>,
): ErrorReply {
  const body =
    api === "anthropic-messages"
      ? { type: "error", error: { type, message } }
      : { error: { message, type, param: null, code: code ?? null } };
  return { status, body, ...(headers ? { headers } : {}) };
}
