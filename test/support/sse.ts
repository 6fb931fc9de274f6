/** Reading Server-Sent Events responses in tests, with the parser the CLI uses (`eventsource-parser`). */
import { createParser } from "eventsource-parser";

export interface SseEvent {
  id?: string;
  event?: string;
  data?: string;
}

/** A parser that collects the events of the text it is fed (comments are skipped). */
function collector(): { feed(text: string): void; events: SseEvent[] } {
  const events: SseEvent[] = [];
  const parser = createParser({
    onEvent: ({ id, event, data }) => {
      events.push({
        ...(id !== undefined ? { id } : {}),
        ...(event !== undefined ? { event } : {}),
        data,
      });
    },
  });
  return { feed: (text) => parser.feed(text), events };
}

/** The events of a whole SSE body. */
export function parseSse(text: string): SseEvent[] {
  const { feed, events } = collector();
  feed(text);
  return events;
}

/** Reads an SSE response until `enough` says stop (then cancels) or the stream ends. */
export async function readSse(
  response: Response,
  enough: (events: SseEvent[]) => boolean,
): Promise<SseEvent[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const { feed, events } = collector();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return events;
    feed(decoder.decode(value, { stream: true }));
    if (enough(events)) {
      await reader.cancel();
      return events;
    }
  }
}
