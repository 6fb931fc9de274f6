/**
 * The CLI's reading of a run's Server-Sent Events: framing per the SSE specification whatever
 * the line ends and however the bytes are split into chunks.
 */
import { ApiError, readEventStream, type StreamedEvent } from "../../../src/api-client/client";
import type { AgentEvent, LiveEvent } from "../../../src/core/events";

const encoder = new TextEncoder();

async function* chunks(parts: string[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield encoder.encode(part);
}

async function readWithIds(parts: string[]): Promise<StreamedEvent[]> {
  const events: StreamedEvent[] = [];
  for await (const event of readEventStream(chunks(parts))) events.push(event);
  return events;
}

async function read(parts: string[]): Promise<StreamedEvent["event"][]> {
  return (await readWithIds(parts)).map(({ event }) => event);
}

/** Every way of cutting `text` in two. */
function everySplit(text: string): string[][] {
  return Array.from({ length: text.length + 1 }, (_, at) => [text.slice(0, at), text.slice(at)]);
}

const start = { seq: 1, type: "agent_start", runId: "r1" };
const turn = { seq: 2, type: "turn_start", turn: 1 };

test("LF, CRLF and CR line ends frame the same events, wherever the chunks split", async () => {
  for (const end of ["\n", "\r\n", "\r"]) {
    const body = [
      `id: 1${end}event: agent_start${end}data: ${JSON.stringify(start)}${end}${end}`,
      `: keep-alive${end}${end}`,
      `id: 2${end}event: turn_start${end}data: ${JSON.stringify(turn)}${end}${end}`,
    ].join("");
    for (const parts of everySplit(body)) {
      expect({ end, parts, events: await read(parts) }).toEqual({ end, parts, events: [start, turn] });
    }
  }
});

test("retry: fields, comments and multi-line data are read as the specification says", async () => {
  const json = JSON.stringify(turn);
  const body = `retry: 3000\r\n\r\n: comment\r\nid: 2\r\ndata: ${json.slice(0, 10)}\r\ndata: ${json.slice(10)}\r\n\r\n`;
  // Multi-line data is joined with a newline, which JSON allows between tokens only; split
  // at a token boundary the event is intact.
  const split = json.indexOf(",") + 1;
  const valid = `retry: 3000\r\n\r\nid: 2\r\ndata: ${json.slice(0, split)}\r\ndata: ${json.slice(split)}\r\n\r\n`;
  expect(await read([valid])).toEqual([turn]);
  // Data cut inside a string is not JSON: the frame is skipped, not mistaken for an event.
  expect(await read([body])).toEqual([]);
});

test("an error event from the server ends the stream with an ApiError saying what the server said, once", async () => {
  const said = "the API could not read the run's events: Error: 14 UNAVAILABLE";
  const body = `data: ${JSON.stringify(start)}\r\n\r\nevent: error\r\ndata: ${JSON.stringify({ message: said })}\r\n\r\n`;
  const seen: AgentEvent[] = [];
  const reading = (async () => {
    for await (const { event } of readEventStream(chunks([body]))) seen.push(event as AgentEvent);
  })();
  await expect(reading).rejects.toThrow(ApiError);
  await expect(reading).rejects.toThrow(new ApiError(0, "stream-error", said));
  expect(seen).toEqual([start]);
});

test("live events come with their seq:offset ids; unknown data is skipped", async () => {
  const delta: LiveEvent = {
    type: "message_update",
    entryId: "e1",
    attempt: 1,
    assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "Hi" },
  };
  const body = [
    `id: 2\ndata: ${JSON.stringify(turn)}\n\n`,
    `id: 2:7\nevent: message_update\ndata: ${JSON.stringify(delta)}\n\n`,
    `id: 2:8\ndata: {"type":"something_else"}\n\n`,
  ].join("");
  expect(await readWithIds([body])).toEqual([
    { id: "2", event: turn },
    { id: "2:7", event: delta },
  ]);
});
