/** Reading Server-Sent Events responses in tests. */
export interface SseEvent {
  id?: string;
  event?: string;
  data?: string;
}

export function parseSse(text: string): SseEvent[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim() && !block.startsWith(":"))
    .map((block) => {
      const event: SseEvent = {};
      for (const line of block.split("\n")) {
        const [field, ...rest] = line.split(": ");
        if (field === "id" || field === "event" || field === "data") event[field] = rest.join(": ");
      }
      return event;
    });
}

/** Reads an SSE response until `enough` says stop (then cancels) or the stream ends. */
export async function readSse(
  response: Response,
  enough: (events: SseEvent[]) => boolean,
): Promise<SseEvent[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return parseSse(text);
    text += decoder.decode(value, { stream: true });
    const complete = text.slice(0, text.lastIndexOf("\n\n") + 2);
    if (enough(parseSse(complete))) {
      await reader.cancel();
      return parseSse(complete);
    }
  }
}
