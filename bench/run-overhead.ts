/**
 * Orchestration overhead per turn: a Keel run against a zero-latency model with one fast tool
 * (`ls`) per turn, against a bare workflow doing the same number of no-op activities (one "llm"
 * and one "tool" per turn, one "llm" for the answer) on the same Temporal server, alternated in
 * rounds. A separate counted run goes through an S3 proxy to count round trips per turn.
 *
 * Run: npx tsx bench/run-overhead.ts   (BENCH_TURNS=30, BENCH_ROUNDS=7)
 * Writes bench/results/run-overhead.md and .json.
 */

import { runWorkflowId } from "../src/workflows/types";
import { bareActivities } from "./support/bare-activities";
import type { bareTurns } from "./support/bare-workflow";
import { startBenchWorker } from "./support/bench-worker";
import { startCountingProxy } from "./support/counting-proxy";
import { fetchEvents, mergeBreakdowns, type TimeBreakdown, timeBreakdown } from "./support/history";
import { startInProcessWorkers } from "./support/keel-workers";
import {
  fixed,
  intFromEnv,
  machineInfo,
  machineLine,
  ratio,
  runBenchmark,
  table,
  writeResults,
} from "./support/report";
import { median, runClient, runLsLoop } from "./support/runs";
import { bundleWorkflows, startBenchStack } from "./support/stack";

const TURNS = intFromEnv("BENCH_TURNS", 30);
const ROUNDS = intFromEnv("BENCH_ROUNDS", 7);
/** Untimed rounds first: JIT, workflow caches and connections warm for both. */
const WARMUP_ROUNDS = 1;
const TARGET_RATIO = 1.3;

function breakdownRows(
  label: string,
  breakdown: TimeBreakdown,
  turns: number,
): Array<Array<string | number>> {
  return [
    ...breakdown.activities.map((timing) => [
      label,
      timing.activity,
      fixed(timing.count / turns, 2),
      fixed(timing.meanQueueMs),
      fixed(timing.meanRunMs),
      fixed((timing.count * (timing.meanQueueMs + timing.meanRunMs)) / turns),
    ]),
    [
      label,
      "_between activities (workflow tasks)_",
      "",
      "",
      "",
      fixed(breakdown.betweenActivitiesMs / turns),
    ],
  ];
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`run-overhead: ${TURNS} turns per run, ${ROUNDS} rounds (+${WARMUP_ROUNDS} warm-up)`);
  const stack = await startBenchStack();
  try {
    const benchBundle = await bundleWorkflows("bench/support/workflows.ts", stack.dir, "bench-workflows");
    const keel = await startInProcessWorkers(stack, "bench-overhead-keel");
    const runs = runClient(stack, keel.taskQueue);
    const bare = await startBenchWorker(stack, "bench-overhead-bare", benchBundle, bareActivities(0));

    const keelPerTurn: number[] = [];
    const barePerTurn: number[] = [];
    const keelWorkflowIds: string[] = [];
    const bareWorkflowIds: string[] = [];
    for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
      const run = await runLsLoop(stack, runs, TURNS);
      const bareStarted = performance.now();
      const workflowId = `bare-${round}-${Date.now()}`;
      await stack.client.workflow.execute<typeof bareTurns>("bareTurns", {
        workflowId,
        taskQueue: "bench-overhead-bare",
        args: [TURNS],
      });
      const bareMs = performance.now() - bareStarted;
      console.log(
        `round ${round}: keel ${fixed(run.wallMs / TURNS)} ms/turn, bare ${fixed(bareMs / TURNS)} ms/turn`,
      );
      if (round < WARMUP_ROUNDS) continue;
      keelPerTurn.push(run.wallMs / TURNS);
      barePerTurn.push(bareMs / TURNS);
      keelWorkflowIds.push(runWorkflowId(run.ref));
      bareWorkflowIds.push(workflowId);
    }
    await bare.stop();
    await keel.stop();
    const breakdownOf = async (workflowIds: string[]) =>
      mergeBreakdowns(
        await Promise.all(workflowIds.map(async (id) => timeBreakdown(await fetchEvents(stack.client, id)))),
      );
    const keelBreakdown = await breakdownOf(keelWorkflowIds);
    const bareBreakdown = await breakdownOf(bareWorkflowIds);
    const timedTurns = TURNS * ROUNDS;

    // A separate run whose S3 traffic goes through a counting proxy (not timed: the proxy adds latency).
    const proxy = await startCountingProxy(stack.s3.settings.endpoint!);
    const counted = await startInProcessWorkers(stack, "bench-overhead-counted", {
      ...stack.s3.settings,
      endpoint: proxy.endpoint,
    });
    const llmBefore = stack.llm.journal().length;
    await runLsLoop(stack, runClient(stack, counted.taskQueue), TURNS);
    const llmCalls = stack.llm.journal().length - llmBefore;
    await counted.stop();
    const s3Counts = proxy.counts();
    await proxy.close();
    const s3Total = Object.values(s3Counts).reduce((sum, tally) => sum + tally.count, 0);
    const s3Ms = Object.values(s3Counts).reduce((sum, tally) => sum + tally.totalMs, 0);

    const perTurn = (breakdown: TimeBreakdown, activity: string, part: "meanQueueMs" | "meanRunMs") => {
      const timing = breakdown.activities.find((candidate) => candidate.activity === activity);
      return timing ? (timing.count * timing[part]) / timedTurns : 0;
    };
    const parts = [
      {
        name: "model activity: run",
        keel: perTurn(keelBreakdown, "llmTurn", "meanRunMs"),
        bare: perTurn(bareBreakdown, "bareLlm", "meanRunMs"),
      },
      {
        name: "model activity: queue",
        keel: perTurn(keelBreakdown, "llmTurn", "meanQueueMs"),
        bare: perTurn(bareBreakdown, "bareLlm", "meanQueueMs"),
      },
      {
        name: "tool activity: run",
        keel: perTurn(keelBreakdown, "executeTool", "meanRunMs"),
        bare: perTurn(bareBreakdown, "bareTool", "meanRunMs"),
      },
      {
        name: "tool activity: queue",
        keel: perTurn(keelBreakdown, "executeTool", "meanQueueMs"),
        bare: perTurn(bareBreakdown, "bareTool", "meanQueueMs"),
      },
      {
        name: "run start (openSession, claimWorkspace)",
        keel: ["openSession", "claimWorkspace"].reduce(
          (sum, activity) =>
            sum +
            perTurn(keelBreakdown, activity, "meanRunMs") +
            perTurn(keelBreakdown, activity, "meanQueueMs"),
          0,
        ),
        bare: 0,
      },
      {
        name: "between activities (workflow tasks)",
        keel: keelBreakdown.betweenActivitiesMs / timedTurns,
        bare: bareBreakdown.betweenActivitiesMs / timedTurns,
      },
    ];
    const keelMedian = median(keelPerTurn);
    const bareMedian = median(barePerTurn);
    const overhead = keelMedian / bareMedian;
    const roundRows = keelPerTurn.map((keelMs, index) => [
      index + 1,
      fixed(keelMs),
      fixed(barePerTurn[index]!),
      ratio(keelMs / barePerTurn[index]!),
    ]);
    const markdown = `# Run overhead benchmark

Wall time per turn of a Keel run (model \`local-chat\` on the local LLM server with zero latency,
one \`ls\` call per turn, then the answer) against a bare workflow doing the same number of no-op
activities (\`bench/support/bare-workflow.ts\`: "llm" + "tool" per turn, a last "llm") on the same
Temporal dev server. Keel's workers and the bare worker run in the same process; the runs
alternate, Keel first, after ${WARMUP_ROUNDS} warm-up round. Keel's time is measured from the
delivery (update-with-start) to the run's result, the bare workflow's from its start to its result.

${machineLine(machine)}
Generated by \`npx tsx bench/run-overhead.ts\` (BENCH_TURNS=${TURNS}, BENCH_ROUNDS=${ROUNDS}).

${table(["round", "Keel ms/turn", "bare ms/turn", "Keel / bare"], roundRows)}

**Median: Keel ${fixed(keelMedian)} ms/turn, bare ${fixed(bareMedian)} ms/turn: ${ratio(overhead)}**
(target ≤ ${TARGET_RATIO}×: ${overhead <= TARGET_RATIO ? "met" : "NOT met"}).

## Where the time goes

From the event times of the timed runs' histories (all rounds, per turn; queue = scheduled →
started, run = started → completed; "between activities" = no activity scheduled or running,
i.e. workflow tasks and their round trips through the server):

${table(
  ["workflow", "activity", "per turn", "mean queue ms", "mean run ms", "ms per turn"],
  [...breakdownRows("Keel", keelBreakdown, timedTurns), ...breakdownRows("bare", bareBreakdown, timedTurns)],
  ["---", "---", "---:", "---:", "---:", "---:"],
)}

Workflow tasks per turn: Keel ${fixed(keelBreakdown.workflowTasks / timedTurns, 2)}, bare ${fixed(bareBreakdown.workflowTasks / timedTurns, 2)}.
History events per turn: Keel ${fixed(keelBreakdown.events / timedTurns, 2)}, bare ${fixed(bareBreakdown.events / timedTurns, 2)}.

### Keel − bare, per turn

${table(
  ["part", "Keel ms/turn", "bare ms/turn", "difference"],
  parts.map((part) => [part.name, fixed(part.keel), fixed(part.bare), fixed(part.keel - part.bare)]),
  ["---", "---:", "---:", "---:"],
)}

(Activity parts from the histories; the rows need not add up to the wall-time medians, which also
hold the client's calls.)

Reading: orchestration proper (workflow tasks between activities) differs by
${fixed(parts[5]!.keel - parts[5]!.bare)} ms/turn; the rest of the gap is the activities' own work.
The model activity loads the new entries (S3 list + get, through the worker's entry cache), calls
the model through the OpenAI SDK over HTTP (streaming) and writes the assistant entry (S3 put);
the tool activity reads the assistant entry, runs \`ls\` in the workspace and writes the result.
The tool activity also waits in its queue: it runs on the worker's own task queue (the workspace
lives there), and Temporal hands an activity to the worker eagerly, with the completion of the
workflow task that scheduled it, only when it is on the workflow's own task queue, as the bare
workflow's are. The LLM server, the client and the workers share this process and its CPU.

S3 requests of one ${TURNS}-turn run, counted by a proxy in front of the S3 server (not timed
above: the proxy adds a hop): ${s3Total} in all, ${fixed(s3Total / TURNS, 2)} per turn, summing to
${fixed(s3Ms / TURNS)} ms per turn of request time.

${table(
  ["S3 request", "count", "per turn", "mean ms"],
  Object.entries(s3Counts)
    .sort()
    .map(([kind, tally]) => [
      kind,
      tally.count,
      fixed(tally.count / TURNS, 2),
      fixed(tally.totalMs / tally.count),
    ]),
  ["---", "---:", "---:", "---:"],
)}

LLM requests: ${llmCalls} (${TURNS} turns + the answer).
`;
    const path = writeResults("run-overhead", markdown, {
      machine,
      parameters: { turns: TURNS, rounds: ROUNDS, warmupRounds: WARMUP_ROUNDS },
      keelPerTurnMs: keelPerTurn,
      barePerTurnMs: barePerTurn,
      keelMedianMs: keelMedian,
      bareMedianMs: bareMedian,
      ratio: overhead,
      keelBreakdown,
      bareBreakdown,
      parts,
      s3Requests: s3Counts,
      llmRequests: llmCalls,
    });
    console.log(markdown);
    console.log(`wrote ${path}`);
  } finally {
    await stack.close();
  }
}

runBenchmark(main);
