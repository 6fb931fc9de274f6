import fc from "fast-check";
import { appendEvent, createEventBuffer, type EventBuffer, eventsAfter } from "../../../src/core/events";
import {
  clearQueue,
  createQueue,
  decideDelivery,
  drain,
  enqueue,
  type MessageQueue,
} from "../../../src/core/queues";

function fill(buffer: EventBuffer, turns: number): EventBuffer {
  let current = buffer;
  for (let turn = 1; turn <= turns; turn++)
    current = appendEvent(current, { type: "turn_start", turn }).buffer;
  return current;
}

describe("event buffer", () => {
  it("numbers events from 1 and reads them incrementally", () => {
    const { buffer, event } = appendEvent(createEventBuffer(10), { type: "agent_start", runId: "r1" });
    expect(event).toEqual({ type: "agent_start", runId: "r1", seq: 1 });
    const more = fill(buffer, 3);
    const read = eventsAfter(more, 1);
    expect(read.events.map((e) => e.seq)).toEqual([2, 3, 4]);
    expect(read).toMatchObject({ missed: false, lastSeq: 4 });
    expect(eventsAfter(more, 4)).toEqual({ events: [], missed: false, lastSeq: 4 });
    expect(eventsAfter(more, 0, 2).events.map((e) => e.seq)).toEqual([1, 2]);
  });

  it("drops the oldest beyond capacity and tells late readers they missed some", () => {
    const buffer = fill(createEventBuffer(3), 5);
    expect(buffer.events.map((e) => e.seq)).toEqual([3, 4, 5]);
    expect(eventsAfter(buffer, 0)).toMatchObject({ missed: true, lastSeq: 5 });
    expect(eventsAfter(buffer, 2).missed).toBe(false);
    expect(JSON.parse(JSON.stringify(buffer))).toEqual(buffer);
  });

  it("continues numbering in a new buffer (continue-as-new)", () => {
    const carried = createEventBuffer(5, fill(createEventBuffer(5), 7).nextSeq);
    expect(appendEvent(carried, { type: "turn_start", turn: 8 }).event.seq).toBe(8);
    expect(() => createEventBuffer(0)).toThrow(RangeError);
  });

  it("property: seq strictly increases by one and the buffer never exceeds capacity", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 60 }), (capacity, count) => {
        const buffer = fill(createEventBuffer(capacity), count);
        expect(buffer.events.length).toBe(Math.min(capacity, count));
        const firstKept = count - buffer.events.length + 1;
        expect(buffer.events.map((e) => e.seq)).toEqual(buffer.events.map((_, i) => firstKept + i));
      }),
    );
  });
});

describe("queues", () => {
  function queueOf(mode: "one-at-a-time" | "all", items: string[], capacity = 10): MessageQueue<string> {
    let queue = createQueue<string>(mode, capacity);
    for (const item of items) {
      const result = enqueue(queue, item);
      if (!result.ok) throw new Error("full");
      queue = result.queue;
    }
    return queue;
  }

  it("one-at-a-time hands out the oldest message per drain", () => {
    let queue = queueOf("one-at-a-time", ["a", "b", "c"]);
    const taken: string[][] = [];
    for (let i = 0; i < 4; i++) {
      const result = drain(queue);
      taken.push(result.taken);
      queue = result.queue;
    }
    expect(taken).toEqual([["a"], ["b"], ["c"], []]);
  });

  it("all hands out everything at once", () => {
    const { taken, queue } = drain(queueOf("all", ["a", "b", "c"]));
    expect(taken).toEqual(["a", "b", "c"]);
    expect(queue.items).toEqual([]);
  });

  it("refuses beyond the bound instead of dropping", () => {
    const full = queueOf("all", ["a", "b"], 2);
    expect(enqueue(full, "c")).toEqual({ ok: false, reason: "queue_full", capacity: 2 });
    expect(full.items).toEqual(["a", "b"]);
    expect(clearQueue(full)).toEqual({ removed: ["a", "b"], queue: { ...full, items: [] } });
    const result = enqueue(queueOf("all", ["a"], 2), "b");
    expect(result.ok && result.position).toBe(2);
  });

  it("decides delivery by mode while a run is live", () => {
    expect(decideDelivery("steer", false)).toEqual({ action: "start_run" });
    expect(decideDelivery("steer", true)).toEqual({ action: "enqueue", queue: "steering" });
    expect(decideDelivery("followUp", true)).toEqual({ action: "enqueue", queue: "followUp" });
    expect(decideDelivery("interrupt", true)).toEqual({ action: "interrupt" });
    expect(decideDelivery("reject", true)).toEqual({ action: "refuse", reason: "busy" });
  });
});
