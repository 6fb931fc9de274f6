/**
 * Orchestration overhead per turn: a Keel run against a zero-latency model with one fast tool
 * (`ls`) per turn, against a bare workflow doing the same number of activities (one "llm" and one
 * "tool" per turn, one "llm" for the answer) on the same Temporal server, alternated in rounds:
 * once with no-op activities, once with activities doing a turn's unavoidable I/O (a model call
 * over HTTP, one S3 write each). Per run: CPU of each process and the machine's busy share; from the histories and the
 * server's \`action\` counter, billable Temporal Actions per turn and their cost. A separate
 * counted run goes through an S3 proxy to count round trips per turn.
 *
 * Run: npx tsx bench/run-overhead.ts   (BENCH_TURNS=30, BENCH_ROUNDS=7)
 * Writes bench/results/run-overhead.md and .json. With BENCH_ON_CLUSTER=1 the same runs go to the
 * local cluster's Temporal and S3 (bench/cluster/, started and stopped here; outside CI) and the
 * results to run-overhead-cluster.md and .json.
 */

import { join } from "node:path";
import { runWorkflowId } from "../src/contracts/runs";
import { startClusterBenchStack } from "./cluster/bench-stack";
import { bareActivities } from "./support/bare-activities";
import { bareIoActivities, registerBareIoScenario } from "./support/bare-io-activities";
import type { bareTurns } from "./support/bare-workflow";
import { startBenchWorker } from "./support/bench-worker";
import { costSection } from "./support/cost";
import { startCountingProxy } from "./support/counting-proxy";
import { fetchEvents, mergeBreakdowns, type TimeBreakdown, timeBreakdown } from "./support/history";
import { startInProcessWorkers } from "./support/keel-workers";
import { type CpuWindow, measureCpu } from "./support/proc-stats";
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
import {
  type ActionCounts,
  countsSince,
  historyActions,
  serverActions,
  sumCounts,
  totalOf,
} from "./support/temporal-actions";

const TURNS = intFromEnv("BENCH_TURNS", 30);
const ROUNDS = intFromEnv("BENCH_ROUNDS", 7);
/** Untimed rounds first: JIT, workflow caches and connections warm for both. */
const WARMUP_ROUNDS = 1;
const TARGET_RATIO = 1.2;
/** Share of the machine used by processes other than the benchmark's that flags a round noisy. */
const NOISY_OTHERS_SHARE = 0.2;
const BENCH_PROCESS = "benchmark (workers, client, LLM server)";
const ON_CLUSTER = process.env.BENCH_ON_CLUSTER === "1";
const MONTHLY_TURNS = 1_000_000;

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

/** One kind of workflow the benchmark times, with what its timed rounds measured. */
interface Kind {
  label: string;
  /** One run of TURNS turns: its wall time and workflow id. */
  runOnce(round: number): Promise<{ wallMs: number; workflowId: string }>;
  perTurnMs: number[];
  cpu: CpuWindow[];
  actions: ActionCounts[];
  workflowIds: string[];
}

function kind(label: string, runOnce: Kind["runOnce"]): Kind {
  return { label, runOnce, perTurnMs: [], cpu: [], actions: [], workflowIds: [] };
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`run-overhead: ${TURNS} turns per run, ${ROUNDS} rounds (+${WARMUP_ROUNDS} warm-up)`);
  const stack = ON_CLUSTER ? await startClusterBenchStack() : await startBenchStack();
  try {
    const benchBundle = await bundleWorkflows("bench/support/workflows.ts", stack.dir, "bench-workflows");
    const keelWorkers = await startInProcessWorkers(stack, "bench-overhead-keel");
    const runs = runClient(stack, keelWorkers.taskQueue);
    const bareWorkers = await startBenchWorker(stack, "bench-overhead-bare", benchBundle, bareActivities(0));
    registerBareIoScenario(stack.llm);
    const bareIoWorkers = await startBenchWorker(
      stack,
      "bench-overhead-bare-io",
      benchBundle,
      bareIoActivities({
        s3: stack.s3.settings,
        openaiBaseURL: stack.llm.openaiBaseURL,
        folder: join(stack.dir, "bare-io-workspace"),
      }),
    );
    const bareRun = (taskQueue: string) => async (round: number) => {
      const workflowId = `${taskQueue}-${round}-${Date.now()}`;
      const started = performance.now();
      await stack.client.workflow.execute<typeof bareTurns>("bareTurns", {
        workflowId,
        taskQueue,
        args: [TURNS],
      });
      return { wallMs: performance.now() - started, workflowId };
    };
    const keel = kind("Keel", async () => {
      const run = await runLsLoop(stack, runs, TURNS);
      return { wallMs: run.wallMs, workflowId: runWorkflowId(run.ref) };
    });
    const bare = kind("bare", bareRun("bench-overhead-bare"));
    const bareIo = kind("bare + I/O", bareRun("bench-overhead-bare-io"));
    const kinds = [keel, bare, bareIo];

    const measuredProcesses = [{ name: BENCH_PROCESS, pid: process.pid }, ...stack.servers()];
    const pids = measuredProcesses.map((measured) => measured.pid);
    const processNames = [...new Set(measuredProcesses.map((measured) => measured.name))];
    const actionsNow = () => serverActions(stack.temporal.metricsUrl, stack.temporal.namespace);
    for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
      const line: string[] = [];
      for (const measured of kinds) {
        const before = await actionsNow();
        const { result, cpu } = await measureCpu(pids, () => measured.runOnce(round));
        const after = await actionsNow();
        line.push(
          `${measured.label} ${fixed(result.wallMs / TURNS)} ms/turn (busy ${fixed(100 * cpu.machineBusyShare, 0)}%)`,
        );
        if (round < WARMUP_ROUNDS) continue;
        measured.perTurnMs.push(result.wallMs / TURNS);
        measured.cpu.push(cpu);
        measured.actions.push(countsSince(before, after));
        measured.workflowIds.push(result.workflowId);
      }
      console.log(`round ${round}: ${line.join(", ")}`);
    }
    await bareIoWorkers.stop();
    await bareWorkers.stop();
    await keelWorkers.stop();
    const timedTurns = TURNS * ROUNDS;
    const histories = await Promise.all(
      kinds.map((measured) => Promise.all(measured.workflowIds.map((id) => fetchEvents(stack.client, id)))),
    );
    const [keelBreakdown, bareBreakdown, bareIoBreakdown] = histories.map((events) =>
      mergeBreakdowns(events.map(timeBreakdown)),
    ) as [TimeBreakdown, TimeBreakdown, TimeBreakdown];
    const historyActionsOf = histories.map((events) => sumCounts(events.map(historyActions)));

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
    /** The same part of a turn in Keel, bare and bare + I/O (whose activities share bare's names). */
    const part = (
      name: string,
      keelActivities: string[],
      bareActivity: string | undefined,
      which: "meanQueueMs" | "meanRunMs" | "both",
    ) => {
      const of = (breakdown: TimeBreakdown, activities: string[]) =>
        activities.reduce(
          (sum, activity) =>
            sum +
            (which !== "meanQueueMs" ? perTurn(breakdown, activity, "meanRunMs") : 0) +
            (which !== "meanRunMs" ? perTurn(breakdown, activity, "meanQueueMs") : 0),
          0,
        );
      const bareSide = bareActivity ? [bareActivity] : [];
      return {
        name,
        keel: of(keelBreakdown, keelActivities),
        bare: of(bareBreakdown, bareSide),
        bareIo: of(bareIoBreakdown, bareSide),
      };
    };
    const between = {
      name: "between activities (workflow tasks)",
      keel: keelBreakdown.betweenActivitiesMs / timedTurns,
      bare: bareBreakdown.betweenActivitiesMs / timedTurns,
      bareIo: bareIoBreakdown.betweenActivitiesMs / timedTurns,
    };
    const parts = [
      part("model activity: run", ["llmTurn"], "bareLlm", "meanRunMs"),
      part("model activity: queue", ["llmTurn"], "bareLlm", "meanQueueMs"),
      part("tool activity: run", ["executeTool"], "bareTool", "meanRunMs"),
      part("tool activity: queue", ["executeTool"], "bareTool", "meanQueueMs"),
      part("run start (openSession, claimWorkspace)", ["openSession", "claimWorkspace"], undefined, "both"),
      between,
    ];
    const medianOf = (measured: Kind) => median(measured.perTurnMs);
    const [keelMedian, bareMedian, bareIoMedian] = kinds.map(medianOf) as [number, number, number];
    const overhead = keelMedian / bareMedian;
    const overIo = keelMedian / bareIoMedian;
    const cpuPerTurn = (window: CpuWindow) => window.cpuSeconds.reduce((sum, used) => sum + used, 0) / TURNS;
    const roundRows = keel.perTurnMs.map((keelMs, index) => {
      const windows = kinds.map((measured) => measured.cpu[index]!);
      const noisy = Math.max(...windows.map((window) => window.othersShare)) > NOISY_OTHERS_SHARE;
      const shares = (pick: (window: CpuWindow) => number) =>
        windows.map((window) => `${fixed(100 * pick(window), 0)}%`).join(" / ");
      return [
        index + 1,
        fixed(keelMs),
        fixed(bare.perTurnMs[index]!),
        fixed(bareIo.perTurnMs[index]!),
        ratio(keelMs / bare.perTurnMs[index]!),
        ratio(keelMs / bareIo.perTurnMs[index]!),
        windows.map((window) => fixed(1000 * cpuPerTurn(window))).join(" / "),
        shares((window) => window.machineBusyShare),
        `${shares((window) => window.othersShare)} (steal ${shares((window) => window.stealShare)})`,
        noisy ? "**noisy**" : "",
      ];
    });
    const noisyRounds = roundRows.filter((row) => row[9] !== "").length;
    const [keelCpuMedian, bareCpuMedian, bareIoCpuMedian] = kinds.map((measured) =>
      median(measured.cpu.map(cpuPerTurn)),
    ) as [number, number, number];
    /** CPU seconds of the processes named `name` (a cluster service may run as several). */
    const cpuOfName = (window: CpuWindow, name: string) =>
      measuredProcesses.reduce(
        (sum, measured, index) => sum + (measured.name === name ? window.cpuSeconds[index]! : 0),
        0,
      );
    const cpuByProcess = processNames.map((name) => [
      name,
      ...kinds.map((measured) =>
        fixed((1000 * median(measured.cpu.map((window) => cpuOfName(window, name)))) / TURNS, 1),
      ),
    ]);
    const actionsPerTurn = (counts: ActionCounts[]) => totalOf(sumCounts(counts)) / timedTurns;
    const s3PerTurn = Object.fromEntries(
      Object.entries(s3Counts).map(([kind, tally]) => [kind, tally.count / TURNS]),
    );
    // bare + I/O stores one object per activity: TURNS tool results and TURNS + 1 answers.
    const bareIoS3PerTurn = { "PUT object": (2 * TURNS + 1) / TURNS };
    const cost = costSection(
      [
        { label: "Keel", actionsPerTurn: actionsPerTurn(keel.actions), s3PerTurn },
        { label: "bare", actionsPerTurn: actionsPerTurn(bare.actions), s3PerTurn: {} },
        { label: "bare + I/O", actionsPerTurn: actionsPerTurn(bareIo.actions), s3PerTurn: bareIoS3PerTurn },
      ],
      MONTHLY_TURNS,
    );
    const actionRows = kinds.map((measured, index) => {
      const fromHistories = historyActionsOf[index]!;
      return [
        measured.label,
        fixed(totalOf(fromHistories) / timedTurns, 2),
        Object.entries(fromHistories)
          .map(([category, count]) => `${category} ${fixed(count / timedTurns, 2)}`)
          .join(", "),
        fixed(actionsPerTurn(measured.actions), 2),
        Object.entries(sumCounts(measured.actions))
          .sort((a, b) => b[1] - a[1])
          .map(([type, count]) => `${type} ${fixed(count / timedTurns, 2)}`)
          .join(", "),
      ];
    });
    const keelOwn = parts.reduce((sum, row) => sum + row.keel - row.bareIo, 0);
    const markdown = `# Run overhead benchmark

Wall time per turn of a Keel run (model \`local-chat\` on the local LLM server with zero latency,
one \`ls\` call per turn, then the answer) against two bare workflows on ${stack.label}, each doing the same number of activities (\`bench/support/bare-workflow.ts\`: "llm" +
"tool" per turn, a last "llm"):

- **bare**: the activities do nothing (\`bench/support/bare-activities.ts\`). The issue's target is
  set against this one.
- **bare + I/O**: the activities do the I/O a durable agent turn cannot do without, and nothing
  else (\`bench/support/bare-io-activities.ts\`): the "llm" one calls the local LLM server through
  the OpenAI SDK (streaming) and stores the answer as one S3 object, the "tool" one lists a folder
  and stores the listing; each object a conditional create, as a session entry is. Keel over this
  is the cost of Keel's own work: its session format and entry cache, the workspace and its lock,
  live events, its workflow code.

All workers run in the benchmark's process; the runs alternate (Keel, bare, bare + I/O) after
${WARMUP_ROUNDS} warm-up round. Keel's time is measured from the delivery (update-with-start) to
the run's result, the bare workflows' from their start to their result.

**Shared machine.** ${machineLine(machine)} Other engineers were running tests on the same
machine: each run records the machine's busy share (/proc/stat) and the part of it not used by the
benchmark's processes ("others"; in brackets the part of it the hypervisor gave to other
machines, steal); ${noisyRounds} of ${ROUNDS} rounds had others above ${fixed(100 * NOISY_OTHERS_SHARE, 0)}% of the
machine in one of its runs and are flagged noisy (kept, not dropped).
Generated by \`${ON_CLUSTER ? "BENCH_ON_CLUSTER=1 " : ""}npx tsx bench/run-overhead.ts\` (BENCH_TURNS=${TURNS}, BENCH_ROUNDS=${ROUNDS}).

${table(
  [
    "round",
    "Keel ms/turn",
    "bare ms/turn",
    "bare + I/O ms/turn",
    "Keel / bare",
    "Keel / bare + I/O",
    "CPU ms/turn (Keel / bare / + I/O)",
    "machine busy",
    "others",
    "",
  ],
  roundRows,
  ["---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---"],
)}

**Median: Keel ${fixed(keelMedian)} ms/turn, bare ${fixed(bareMedian)} ms/turn: ${ratio(overhead)}**
(target ≤ ${TARGET_RATIO}×: ${overhead <= TARGET_RATIO ? "met" : "NOT met"}).
**Against bare + I/O (${fixed(bareIoMedian)} ms/turn): ${ratio(overIo)}.**
**CPU per turn, all measured processes (median): Keel ${fixed(1000 * keelCpuMedian)} ms, bare ${fixed(1000 * bareCpuMedian)} ms (${ratio(keelCpuMedian / bareCpuMedian)}), bare + I/O ${fixed(1000 * bareIoCpuMedian)} ms (${ratio(keelCpuMedian / bareIoCpuMedian)}).**

${table(["process", "Keel CPU ms/turn", "bare CPU ms/turn", "bare + I/O CPU ms/turn"], cpuByProcess, ["---", "---:", "---:", "---:"])}

CPU from /proc/<pid>/stat (user + system, each process with every process below it) over each
run; the workers, the client and the LLM server share the benchmark process.

## Where the time goes

From the event times of the timed runs' histories (all rounds, per turn; queue = scheduled →
started, run = started → completed; "between activities" = no activity scheduled or running,
i.e. workflow tasks and their round trips through the server):

${table(
  ["workflow", "activity", "per turn", "mean queue ms", "mean run ms", "ms per turn"],
  [
    ...breakdownRows("Keel", keelBreakdown, timedTurns),
    ...breakdownRows("bare", bareBreakdown, timedTurns),
    ...breakdownRows("bare + I/O", bareIoBreakdown, timedTurns),
  ],
  ["---", "---", "---:", "---:", "---:", "---:"],
)}

Workflow tasks per turn: Keel ${fixed(keelBreakdown.workflowTasks / timedTurns, 2)}, bare ${fixed(bareBreakdown.workflowTasks / timedTurns, 2)}, bare + I/O ${fixed(bareIoBreakdown.workflowTasks / timedTurns, 2)}.
History events per turn: Keel ${fixed(keelBreakdown.events / timedTurns, 2)}, bare ${fixed(bareBreakdown.events / timedTurns, 2)}, bare + I/O ${fixed(bareIoBreakdown.events / timedTurns, 2)}.

### Keel against each, per turn

${table(
  ["part", "Keel ms/turn", "bare ms/turn", "bare + I/O ms/turn", "Keel − bare", "Keel − (bare + I/O)"],
  parts.map((row) => [
    row.name,
    fixed(row.keel),
    fixed(row.bare),
    fixed(row.bareIo),
    fixed(row.keel - row.bare),
    fixed(row.keel - row.bareIo),
  ]),
  ["---", "---:", "---:", "---:", "---:", "---:"],
)}

(Activity parts from the histories; the rows need not add up to the wall-time medians, which also
hold the client's calls.)

Reading: orchestration proper (workflow tasks between activities) differs from bare by
${fixed(between.keel - between.bare)} ms/turn. Of the rest, the I/O any durable agent turn does
(a model call over HTTP, two S3 writes) is what bare + I/O pays; Keel's own work on top of it sums
to ${fixed(keelOwn)} ms/turn over these rows.
Keel's model activity also reads the new entries (through the worker's entry cache) and
publishes live events; its tool activity reads the assistant entry, takes the workspace lock,
runs \`ls\` through the tool layer and writes the result. The tool activity also waits in its
queue: it runs on the worker's own task queue (the workspace lives there), and Temporal hands an
activity to the worker eagerly, with the completion of the workflow task that scheduled it, only
when it is on the workflow's own task queue, as the bare workflows' are.

S3 requests of one ${TURNS}-turn run, counted by a proxy in front of the S3 server (not timed
above: the proxy adds a hop): ${s3Total} in all, ${fixed(s3Total / TURNS, 2)} per turn, summing to
${fixed(s3Ms / TURNS)} ms per turn of request time (bare + I/O: ${fixed(bareIoS3PerTurn["PUT object"], 2)} PUTs per turn).

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

## Temporal Actions and cost per turn

Billable Temporal Cloud Actions per turn of the timed runs (the run's start spread over its ${TURNS}
turns): from the histories' event types (bench/support/temporal-actions.ts), and from the Temporal
server's own \`action\` counter, which also sees activity heartbeats.

${table(["workflow", "from histories", "by category", "server counter", "by type"], actionRows, [
  "---",
  "---:",
  "---",
  "---:",
  "---",
])}

Cost of turns at list prices (Actions from the server's counter; S3 requests from the counted run above):

${cost.markdown}
`;
    const path = writeResults(ON_CLUSTER ? "run-overhead-cluster" : "run-overhead", markdown, {
      machine,
      parameters: { turns: TURNS, rounds: ROUNDS, warmupRounds: WARMUP_ROUNDS },
      keelPerTurnMs: keel.perTurnMs,
      barePerTurnMs: bare.perTurnMs,
      bareIoPerTurnMs: bareIo.perTurnMs,
      keelMedianMs: keelMedian,
      bareMedianMs: bareMedian,
      bareIoMedianMs: bareIoMedian,
      ratio: overhead,
      ratioOverBareIo: overIo,
      keelBreakdown,
      bareBreakdown,
      bareIoBreakdown,
      parts,
      s3Requests: s3Counts,
      llmRequests: llmCalls,
      cpu: { keel: keel.cpu, bare: bare.cpu, bareIo: bareIo.cpu, processes: processNames },
      actionsPerTurn: {
        keelFromHistories: totalOf(historyActionsOf[0]!) / timedTurns,
        bareFromHistories: totalOf(historyActionsOf[1]!) / timedTurns,
        bareIoFromHistories: totalOf(historyActionsOf[2]!) / timedTurns,
        keelServerCounter: actionsPerTurn(keel.actions),
        bareServerCounter: actionsPerTurn(bare.actions),
        bareIoServerCounter: actionsPerTurn(bareIo.actions),
      },
      monthlyCost: cost.costs,
    });
    console.log(markdown);
    console.log(`wrote ${path}`);
  } finally {
    await stack.close();
  }
}

runBenchmark(main);
