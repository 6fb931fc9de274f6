/** `keel events --follow` when the API's stream breaks off once: it resumes quietly from the last id. */
import { type ApiClient, ApiError, type StreamedEvent } from "../../../src/api-client/client";
import { followRun } from "../../../src/cli/commands/follow";
import { EventPrinter } from "../../../src/cli/render";

test("a stream that failed once is resumed from the last id without a word; the events come once", async () => {
  const asked: string[] = [];
  const streams: StreamedEvent[][] = [
    [{ id: "1", event: { seq: 1, type: "agent_start", runId: "r1" } }],
    [{ id: "2", event: { seq: 2, type: "agent_end", status: "completed" } as StreamedEvent["event"] }],
  ];
  const client = {
    async *events(_session: string, lastId: string) {
      asked.push(lastId);
      const events = streams.shift() ?? [];
      yield* events;
      if (streams.length > 0)
        throw new ApiError(
          0,
          "stream-error",
          "the API could not read the run's events: Error: 14 UNAVAILABLE",
        );
    },
  } as unknown as ApiClient;
  let out = "";
  let err = "";
  const printer = new EventPrinter({ write: (text) => (out += text), isTTY: false }, false);
  const status = await followRun(client, "s1", 0, printer, { err: (text) => (err += text) });
  expect(status).toBe("completed");
  expect(asked).toEqual(["0", "1"]);
  expect(err).toBe("");
  expect(out).toBe("▶ run r1 started\n■ run completed\n");
});
