/** Which calls a chaos runner holds, read from its log: what a runner kill aims at. */
import { heldCallsOf } from "../../chaos/runners";

const line = (msg: string, callId?: string) =>
  JSON.stringify({ time: "t", msg, ...(callId ? { callId } : {}) });

test("a call claimed and not yet done, dropped or given up is held", () => {
  const log = [
    line("runner started"),
    line("call claimed", "c1"),
    line("call claimed", "c2"),
    line("call claimed", "c3"),
    line("call claimed", "c4"),
    line("call done", "c1"),
    line("result not stored", "c2"),
    line("call lost to another attempt; its output is dropped", "c3"),
    "Error: not a log line",
    "",
  ].join("\n");
  expect(heldCallsOf(log)).toEqual(["c4"]);
});

test("a call claimed again after it was done is held again", () => {
  const log = [line("call claimed", "c1"), line("call done", "c1"), line("call claimed", "c1")].join("\n");
  expect(heldCallsOf(log)).toEqual(["c1"]);
});
