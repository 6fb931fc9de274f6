/**
 * The contract run/stream.ts relies on in @temporalio/workflow-streams: private members of
 * `WorkflowStream` (its log, base offset, draining flag, and the publish and poll handlers its
 * constructor registers), read through `StreamInternals`. The library does not promise them, so
 * this test runs the installed library outside a workflow (its workflow API stubbed) and fails
 * when an upgrade renames or reshapes any of them.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { defaultPayloadConverter } from "@temporalio/common";

const handlers = new Map<string, unknown>();
let waited: (() => boolean) | undefined;

jest.mock("@temporalio/workflow", () => {
  const actual = jest.requireActual("@temporalio/common");
  return {
    defineSignal: (name: string) => ({ name, type: "signal" }),
    defineUpdate: (name: string) => ({ name, type: "update" }),
    defineQuery: (name: string) => ({ name, type: "query" }),
    setHandler: (definition: { name: string }, handler: unknown) => handlers.set(definition.name, handler),
    // A poll whose items are there returns at once; one that would wait says so.
    condition: async (ready: () => boolean) => {
      waited = ready;
      if (!ready()) throw new Error("the poll would wait");
    },
    allHandlersFinished: () => true,
    continueAsNew: () => undefined,
    defaultPayloadConverter: actual.defaultPayloadConverter,
  };
});

import { encodePayloadWire, WorkflowStream } from "@temporalio/workflow-streams/workflow";
import type { StreamInternals } from "../../../src/workflows/run/stream";

function opened(): { stream: WorkflowStream; internals: StreamInternals } {
  const stream = new WorkflowStream();
  return { stream, internals: stream as unknown as StreamInternals };
}

test("the installed library is the version run/stream.ts is written against", () => {
  const pinned = JSON.parse(readFileSync(resolve(__dirname, "../../../package.json"), "utf8")).dependencies[
    "@temporalio/workflow-streams"
  ];
  const installed = JSON.parse(
    readFileSync(require.resolve("@temporalio/workflow-streams/package.json"), "utf8"),
  ).version;
  expect(installed).toBe(pinned);
});

test("the log, its base offset and the draining flag are the stream's own fields", () => {
  const { stream, internals } = opened();
  expect(internals.log).toEqual([]);
  expect(internals.baseOffset).toBe(0);
  expect(internals.draining).toBe(false);

  stream.topic<string>("events").publish("one");
  stream.topic<string>("events").publish("two");
  expect(internals.log.map((item) => item.topic)).toEqual(["events", "events"]);
  expect(defaultPayloadConverter.fromPayload(internals.log[1]!.payload)).toBe("two");

  // Truncation drops items from the front and moves the base offset: offsets stay as they were.
  stream.truncate(1);
  expect(internals.baseOffset).toBe(1);
  expect(internals.log).toHaveLength(1);

  stream.detachPollers();
  expect(internals.draining).toBe(true);
});

test("onPublish is the publish signal's handler: it appends the batch and drops a repeated sequence", () => {
  const { internals } = opened();
  expect(typeof handlers.get("__temporal_workflow_stream_publish")).toBe("function");
  const batch = {
    items: [{ topic: "live", data: encodePayloadWire(defaultPayloadConverter.toPayload({ delta: "a" })) }],
    publisher_id: "activity-1",
    sequence: 1,
  };
  internals.onPublish(batch);
  internals.onPublish(batch);
  expect(internals.log).toHaveLength(1);
  expect(defaultPayloadConverter.fromPayload(internals.log[0]!.payload)).toEqual({ delta: "a" });
});

test("onPoll is the poll update's handler: it answers the items from an offset, with their offsets", async () => {
  const { stream, internals } = opened();
  stream.topic<string>("events").publish("one");
  stream.topic<string>("live").publish("two");
  const result = await internals.onPoll({ topics: ["live"], from_offset: 0 });
  expect(result.items.map((item) => item.offset)).toEqual([1]);
  expect(result.next_offset).toBe(2);
  // Nothing past the end: the poll waits on the log's length, which a publish ends.
  await expect(internals.onPoll({ topics: [], from_offset: 2 })).rejects.toThrow("would wait");
  stream.topic<string>("events").publish("three");
  expect(waited?.()).toBe(true);
});
