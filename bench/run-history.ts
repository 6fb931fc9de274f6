/**
 * History bytes per turn: one long Keel run (default 200 turns, each one model call answered
 * with one `ls` call, then the answer) against the naive variant that passes the whole message
 * list to the model activity every turn, replaying the very same messages. Sizes are the encoded
 * protobuf history (what Temporal stores and replays) at checkpoints after N turns.
 *
 * Run: npx tsx bench/run-history.ts   (BENCH_TURNS=200, BENCH_CHECKPOINTS=10,50,100,200)
 * Writes bench/results/run-history.md and .json.
 *
 * Then live streaming on against off: short runs (BENCH_STREAM_TURNS, default 20) with live
 * events off (KEEL_LIVE_EVENTS=off, no subscriber: numbered events only) and on (deltas published
 * and one subscriber reading the run's stream, as one API process following the run), with the
 * model at full speed and paced (BENCH_STREAM_TOKENS_PER_SECOND, default 20 words a second).
 */

import { DEFAULT_LIVE_EVENT_OPTIONS } from "../src/activities/live-events";
import { runWorkflowId } from "../src/contracts/runs";
import { convertToLlm, type Message, type ToolResultMessage } from "../src/core/messages";
import type { RunFeed } from "../src/run-client/run-feed";
import { createS3Client } from "../src/store/s3-config";
import { SessionStore } from "../src/store/session-store";
import { startBenchWorker } from "./support/bench-worker";
import {
  bytesAfterTurns,
  bytesByEventType,
  countEventsOfType,
  countScheduled,
  encodedBytes,
  fetchEvents,
  fetchExecutionChain,
} from "./support/history";
import { startInProcessWorkers } from "./support/keel-workers";
import type { NaiveMessage, NaiveToolCall, naiveRun } from "./support/naive-workflow";
import {
  fixed,
  intFromEnv,
  intListFromEnv,
  kb,
  machineInfo,
  machineLine,
  ratio,
  runBenchmark,
  table,
  writeResults,
} from "./support/report";
import { lsLoopScenario, runClient, runLsLoop } from "./support/runs";
import { type BenchStack, bundleWorkflows, startBenchStack } from "./support/stack";

const TURNS = intFromEnv("BENCH_TURNS", 200);
const CHECKPOINTS = intListFromEnv("BENCH_CHECKPOINTS", [10, 50, 100, 200]).filter((n) => n <= TURNS);
/** Keel's per-turn history may grow at most this much from the first checkpoint to the last to count as flat. */
const FLAT_TOLERANCE = 1.1;
const STREAM_TURNS = intFromEnv("BENCH_STREAM_TURNS", 20);
const STREAM_PACE = intFromEnv("BENCH_STREAM_TOKENS_PER_SECOND", 20);
/** The target: history bytes per turn with live streaming on at most this many times off. */
const STREAM_BUDGET = 1.5;

/** Live event settings compared: off, and on with these coalescing intervals. */
const STREAM_INTERVALS_MS = [100, 250];

interface StreamingSample {
  /** Coalescing interval, or 0 for live events off. */
  intervalMs: number;
  tokensPerSecond: number;
  /** Executions of the run (more than one when it continued as new). */
  executions: number;
  bytesPerTurn: number;
  signalsPerTurn: number;
  updatesPerTurn: number;
  streamItems: number;
  wallMs: number;
}

/** Reads a feed to its end; resolves with the number of items it held. */
async function drainFeed(feed: RunFeed): Promise<number> {
  let next = 0;
  for (;;) {
    const { items, end } = await feed.read(next, 1_000);
    if (items.length > 0) next = items[items.length - 1]!.n + 1;
    if (end) return next;
  }
}

/** One short run with live events on (and a subscriber) or off; its history bytes per turn. */
async function streamingSample(
  stack: BenchStack,
  intervalMs: number,
  tokensPerSecond: number,
): Promise<StreamingSample> {
  const live = intervalMs > 0;
  const keel = await startInProcessWorkers(
    stack,
    `bench-stream-${intervalMs}-${tokensPerSecond}`,
    stack.s3.settings,
    {
      liveEvents: live && { ...DEFAULT_LIVE_EVENT_OPTIONS, intervalMs },
    },
  );
  try {
    const scenario = lsLoopScenario(stack.llm, STREAM_TURNS);
    if (tokensPerSecond > 0)
      stack.llm.addFaults([{ kind: "slow", match: { scenario }, times: STREAM_TURNS + 1, tokensPerSecond }]);
    const runs = runClient(stack, keel.taskQueue);
    let reading: Promise<number> | undefined;
    const run = await runLsLoop(stack, runs, STREAM_TURNS, "bench", (ref) => {
      if (live) reading = drainFeed(runs.feed(ref, true));
    });
    const streamItems = (await reading) ?? 0;
    // A long streamed run continues as new when its history grows: all its executions count.
    const chain = await fetchExecutionChain(stack.client, runWorkflowId(run.ref));
    const events = chain.flat();
    return {
      intervalMs,
      tokensPerSecond,
      executions: chain.length,
      bytesPerTurn: chain.reduce((sum, execution) => sum + encodedBytes(execution), 0) / STREAM_TURNS,
      signalsPerTurn: countEventsOfType(events, "WORKFLOW_EXECUTION_SIGNALED") / STREAM_TURNS,
      updatesPerTurn: countEventsOfType(events, "WORKFLOW_EXECUTION_UPDATE_ACCEPTED") / STREAM_TURNS,
      streamItems,
      wallMs: run.wallMs,
    };
  } finally {
    await keel.stop();
  }
}

interface Checkpoint {
  turns: number;
  bytes: number;
  bytesPerTurn: number;
  /** Bytes per turn since the previous checkpoint. */
  marginalPerTurn: number;
}

function checkpoints(bytesAt: (turns: number) => number): Checkpoint[] {
  let previous = { turns: 0, bytes: bytesAt(0) };
  return CHECKPOINTS.map((turns) => {
    const bytes = bytesAt(turns);
    const point = {
      turns,
      bytes,
      bytesPerTurn: bytes / turns,
      marginalPerTurn: (bytes - previous.bytes) / (turns - previous.turns),
    };
    previous = { turns, bytes };
    return point;
  });
}

/**
 * Growth of the per-turn cost: bytes per turn in the last interval ÷ in the second (the first
 * interval also pays for the run's start).
 */
function marginalGrowth(points: Checkpoint[]): number {
  const base = points[Math.min(1, points.length - 1)]!;
  return points[points.length - 1]!.marginalPerTurn / base.marginalPerTurn;
}

/** Activities that replay a recorded conversation: the model answers with the next recorded message. */
function replayActivities(recorded: Message[]) {
  return {
    async naiveModel(messages: NaiveMessage[]): Promise<NaiveMessage> {
      const next = recorded[messages.length];
      if (next?.role !== "assistant") throw new Error(`no recorded answer at ${messages.length}`);
      return next;
    },
    async naiveTool(call: NaiveToolCall): Promise<NaiveMessage> {
      const result = recorded.find(
        (message): message is ToolResultMessage =>
          message.role === "toolResult" && message.toolCallId === call.id,
      );
      if (!result) throw new Error(`no recorded result for ${call.id}`);
      return result;
    },
  };
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`run-history: ${TURNS} turns, checkpoints ${CHECKPOINTS.join(", ")}`);
  const stack = await startBenchStack();
  try {
    const benchBundle = await bundleWorkflows("bench/support/workflows.ts", stack.dir, "bench-workflows");
    // Live events off: this part measures the run's own history; the streaming section below
    // measures what live events add (they also add events, so a 200-turn run that streams is
    // told to continue as new earlier).
    const keel = await startInProcessWorkers(stack, "bench-history", stack.s3.settings, {
      liveEvents: false,
    });
    const run = await runLsLoop(stack, runClient(stack, keel.taskQueue), TURNS);
    const keelEvents = await fetchEvents(stack.client, runWorkflowId(run.ref));
    const modelCalls = countScheduled(keelEvents, "llmTurn");
    if (modelCalls !== TURNS + 1) {
      throw new Error(
        `expected ${TURNS + 1} model calls in one execution, found ${modelCalls} (continued as new?)`,
      );
    }
    console.log(`keel: ${TURNS} turns in ${fixed(run.wallMs / 1000)} s, ${keelEvents.length} events`);

    const s3 = createS3Client(stack.s3.settings);
    const { entries } = await new SessionStore(s3, stack.s3.settings).readEntries(run.ref);
    s3.destroy();
    const recorded = convertToLlm(
      entries.flatMap((stored) => (stored.entry.type === "message" ? [stored.entry.message] : [])),
    );
    await keel.stop();

    const naiveWorker = await startBenchWorker(stack, "bench-naive", benchBundle, replayActivities(recorded));
    const naiveStarted = performance.now();
    const naiveHandle = await stack.client.workflow.start<typeof naiveRun>("naiveRun", {
      workflowId: `naive-${run.ref.sessionId}`,
      taskQueue: "bench-naive",
      args: [recorded[0]!],
    });
    const messageCount = await naiveHandle.result();
    const naiveMs = performance.now() - naiveStarted;
    if (messageCount !== recorded.length)
      throw new Error(`naive run replayed ${messageCount} of ${recorded.length} messages`);
    const naiveEvents = await fetchEvents(stack.client, naiveHandle.workflowId);
    await naiveWorker.stop();
    console.log(`naive: ${TURNS} turns in ${fixed(naiveMs / 1000)} s, ${naiveEvents.length} events`);

    const streaming: StreamingSample[] = [];
    for (const pace of [0, STREAM_PACE]) {
      for (const intervalMs of [0, ...STREAM_INTERVALS_MS]) {
        const sample = await streamingSample(stack, intervalMs, pace);
        console.log(
          `streaming ${intervalMs ? `on (${intervalMs} ms)` : "off"} at ${pace || "full speed"}: ${fixed(sample.bytesPerTurn, 0)} B/turn`,
        );
        streaming.push(sample);
      }
    }
    const streamRows = streaming
      .filter((sample) => sample.intervalMs > 0)
      .map((on) => {
        const off = streaming.find(
          (sample) => sample.intervalMs === 0 && sample.tokensPerSecond === on.tokensPerSecond,
        )!;
        return { pace: on.tokensPerSecond, off, on, ratio: on.bytesPerTurn / off.bytesPerTurn };
      });

    const keelPoints = checkpoints((turns) => bytesAfterTurns(keelEvents, "llmTurn", turns));
    const naivePoints = checkpoints((turns) => bytesAfterTurns(naiveEvents, "naiveModel", turns));
    const keelGrowth = marginalGrowth(keelPoints);
    const naiveGrowth = marginalGrowth(naivePoints);
    const keelByType = bytesByEventType(keelEvents);
    const messageBytes = Buffer.byteLength(JSON.stringify(recorded));

    const rows = keelPoints.map((point, index) => {
      const naive = naivePoints[index]!;
      return [
        point.turns,
        kb(point.bytes),
        fixed(point.bytesPerTurn, 0),
        fixed(point.marginalPerTurn, 0),
        kb(naive.bytes),
        fixed(naive.bytesPerTurn, 0),
        fixed(naive.marginalPerTurn, 0),
        ratio(naive.bytes / point.bytes),
      ];
    });
    const markdown = `# Run history benchmark

Temporal history size per turn of one Keel run, against a naive workflow that passes the whole
message list to its model activity every turn (\`bench/support/naive-workflow.ts\`) and replays
the very same messages (the Keel run's stored session). A turn is one model call answering with
one \`ls\` call; the run ends with one answer after the last turn. Sizes are the encoded protobuf
history (\`temporal.api.history.v1.History\`) up to the moment the next turn's model activity
is scheduled. Both run on the same Temporal dev server in the same process.

${machineLine(machine)}
Generated by \`npx tsx bench/run-history.ts\` (BENCH_TURNS=${TURNS}, BENCH_CHECKPOINTS=${CHECKPOINTS.join(",")}).

Parameters: live events off (see the next section for on), ${TURNS} turns in one run (${recorded.length} session messages, ${kb(messageBytes)} as JSON;
empty workspace, so each \`ls\` result is short), model \`local-chat\` with zero latency.

${table(
  [
    "after N turns",
    "Keel history",
    "Keel B/turn",
    "Keel B/turn since previous",
    "naive history",
    "naive B/turn",
    "naive B/turn since previous",
    "naive / Keel",
  ],
  rows,
)}

Bytes of Keel's history by event type, per turn (whole run ÷ ${TURNS}):

${table(
  ["event type", "events", "B/turn"],
  keelByType.map((row) => [row.type, row.events, fixed(row.bytes / TURNS, 0)]),
  ["---", "---:", "---:"],
)}

- Keel's bytes per turn since the previous checkpoint, last checkpoint ÷ second (the first
  interval also holds the run's start: session open, workspace claim): **${ratio(keelGrowth)}**
  (${keelGrowth <= FLAT_TOLERANCE ? "flat" : "NOT flat"}: within ${FLAT_TOLERANCE}× counts as flat).
- The naive variant's, same measure: **${ratio(naiveGrowth)}** (it grows with the session: quadratic total).
- Whole histories: Keel ${kb(encodedBytes(keelEvents))} in ${keelEvents.length} events; naive ${kb(encodedBytes(naiveEvents))} in ${naiveEvents.length} events.
- Wall time: Keel ${fixed(run.wallMs / 1000)} s, naive replay ${fixed(naiveMs / 1000)} s (the naive activities do no work).

## Live streaming on vs off

Runs of ${STREAM_TURNS} turns (same scenario: a sentence and one \`ls\` call per turn), history
bytes per turn over all of the run's executions (a run whose history grows continues as new). *Off*: live events off (\`KEEL_LIVE_EVENTS=off\`) and nobody reading the run's
stream. *On*: the model's deltas and tool output published, coalesced (a batch at most every
*interval*, \`KEEL_LIVE_EVENTS_INTERVAL_MS\`, default 250), and one API feed
reading the run's stream for the whole run with the run's \`stream\` query (what one API process
following the run does; its other clients share it). Budget: on ≤ ${STREAM_BUDGET}× off.

${table(
  [
    "model pace",
    "interval",
    "off B/turn",
    "on B/turn",
    "on / off",
    "executions (off / on)",
    "publish signals/turn",
    "updates/turn",
    "stream items read",
  ],
  streamRows.map((row) => [
    row.pace ? `${row.pace} words/s` : "full speed",
    `${row.on.intervalMs} ms`,
    fixed(row.off.bytesPerTurn, 0),
    fixed(row.on.bytesPerTurn, 0),
    `${ratio(row.ratio)} (${row.ratio <= STREAM_BUDGET ? "within" : "OVER"} ${STREAM_BUDGET}×)`,
    `${row.off.executions} / ${row.on.executions}`,
    fixed(row.on.signalsPerTurn, 1),
    fixed(row.on.updatesPerTurn, 2),
    row.on.streamItems,
  ]),
)}

The cost of streaming is per batch of deltas, not per token: each batch sent while the activity
runs is one signal, plus the workflow task it wakes (about 0.9 KB together). The last batch of
every call costs neither: what the activity has not sent when it ends comes back with its result
and the run publishes it, so it costs only its own bytes in the result. Reading adds nothing: the
API's feed uses a query, which is not recorded (the stream library's long-poll update records
every answer: measured 2.2× at full speed and 3.5× at 20 words/s with one subscriber, before the
feed moved to the query). The one update per run is the prompt's delivery. So the ratio depends
on how long a turn streams: at full speed a turn's deltas fit one batch, which rides on the
result (no signal); at 20 words/s a turn of this scenario streams for about half a second, one to
three batches of which the last rides on the result. A real model streaming for 10 s adds about
10 s ÷ interval signals to that turn: the interval is the knob between liveliness and history.

Why Keel stays flat: activity inputs carry the session id, the entry slot and settings; results
carry a stop reason, usage and tool-call summaries. The conversation itself is read from S3 by
the activities, so a turn costs the same number of history bytes at turn 10 and at turn ${TURNS}.
The naive variant's model input at turn N holds all 2N messages so far.
`;
    const path = writeResults("run-history", markdown, {
      machine,
      parameters: { turns: TURNS, checkpoints: CHECKPOINTS, messages: recorded.length, messageBytes },
      keel: {
        checkpoints: keelPoints,
        events: keelEvents.length,
        bytes: encodedBytes(keelEvents),
        wallMs: run.wallMs,
      },
      naive: {
        checkpoints: naivePoints,
        events: naiveEvents.length,
        bytes: encodedBytes(naiveEvents),
        wallMs: naiveMs,
      },
      streaming: { turns: STREAM_TURNS, budget: STREAM_BUDGET, samples: streaming },
      keelMarginalGrowth: keelGrowth,
      naiveMarginalGrowth: naiveGrowth,
    });
    console.log(markdown);
    console.log(`wrote ${path}`);
  } finally {
    await stack.close();
  }
}

runBenchmark(main);
