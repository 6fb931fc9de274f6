/**
 * History bytes per turn: one long Keel run (default 200 turns, each one model call answered
 * with one `ls` call, then the answer) against the naive variant that passes the whole message
 * list to the model activity every turn, replaying the very same messages. Sizes are the encoded
 * protobuf history (what Temporal stores and replays) at checkpoints after N turns.
 *
 * Run: npx tsx bench/run-history.ts   (BENCH_TURNS=200, BENCH_CHECKPOINTS=10,50,100,200)
 * Writes bench/results/run-history.md and .json.
 */
import { convertToLlm, type Message, type ToolResultMessage } from "../src/core/messages";
import { createS3Client } from "../src/store/s3-config";
import { SessionStore } from "../src/store/session-store";
import { runWorkflowId } from "../src/workflows/types";
import { startBenchWorker } from "./support/bench-worker";
import {
  bytesAfterTurns,
  bytesByEventType,
  countScheduled,
  encodedBytes,
  fetchEvents,
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
import { runClient, runLsLoop } from "./support/runs";
import { bundleWorkflows, startBenchStack } from "./support/stack";

const TURNS = intFromEnv("BENCH_TURNS", 200);
const CHECKPOINTS = intListFromEnv("BENCH_CHECKPOINTS", [10, 50, 100, 200]).filter((n) => n <= TURNS);
/** Keel's per-turn history may grow at most this much from the first checkpoint to the last to count as flat. */
const FLAT_TOLERANCE = 1.1;

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
    const keel = await startInProcessWorkers(stack, "bench-history");
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

Parameters: ${TURNS} turns in one run (${recorded.length} session messages, ${kb(messageBytes)} as JSON;
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
