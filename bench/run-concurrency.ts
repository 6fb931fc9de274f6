/**
 * Concurrency, Keel against a bare workflow of the same shape, on the same servers in one
 * process, interleaved. At each N (default 1, 50, 100, 200) N runs start at once; each run is
 * 2 `ls` turns and the answer (3 model calls, the model answering after 500 ms). The bare
 * workflow has the same activities (open, llm, claim, tool, llm, tool, llm), its "llm" activity
 * waiting the same 500 ms. A third workflow, "shaped bare", is the bare one using Temporal as a
 * Keel run does (update-with-start, search attributes, a status upsert, tool activities on another
 * queue): it splits Keel's cost into its use of Temporal and its own work. A fourth, "bare + I/O",
 * is the bare one whose activities do a turn's unavoidable I/O (the model call through the OpenAI
 * SDK to the same LLM server, one S3 write per activity): Keel over it is Keel's own work. Every
 * (N, workflow) batch is repeated (default 3), in the order Keel, shaped, bare + I/O, bare on even
 * repeats and the reverse on odd ones; medians are reported.
 *
 * Per batch: fraction of ideal (ideal = model calls × latency ÷ wall time), CPU seconds per run
 * of each process (worker, Temporal dev server, S3 server, this process: client + LLM server,
 * from /proc/<pid>/stat), the machine's busy share (/proc/stat) and how much of it was other
 * processes' (a batch is flagged noisy when that is large), the worker's peak resident set;
 * from a sample of the batch's histories: workflow tasks, activities, events and billable
 * Temporal Cloud Actions per run; the dev server's own `action` counter. After the timed
 * batches, a separate Keel worker behind an S3 request-counting proxy runs a batch to count
 * S3 requests per run (not timed: the proxy adds a hop).
 *
 * Run: npx tsx bench/run-concurrency.ts
 *   BENCH_N=1,50,100,200  BENCH_REPEATS=3  BENCH_TOOL_TURNS=2  BENCH_LATENCY_MS=500
 *   BENCH_HISTORY_SAMPLE=20  BENCH_COUNTED_RUNS=20
 *   BENCH_QUICK=1: N = 1,10, latency 200 ms (a CI-size run; other settings still apply)
 * Writes bench/results/run-concurrency.md and .json (BENCH_QUICK: run-concurrency-quick.*).
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { WithStartWorkflowOperation, WorkflowUpdateStage } from "@temporalio/client";
import { RUN_VERSION, runWorkflowId, startedStatus } from "../src/contracts/runs";
import { runAttributes } from "../src/workflows/search-attributes";
import { registerBareIoScenario } from "./support/bare-io-activities";
import { shapedPromptUpdate, type shapedTurns } from "./support/bare-workflow";
import { startBareWorkerProcess } from "./support/bench-worker";
import { costSection } from "./support/cost";
import { startCountingProxy } from "./support/counting-proxy";
import { fetchEvents, mergeBreakdowns, type TimeBreakdown, timeBreakdown } from "./support/history";
import { MAX_CONCURRENT_ACTIVITIES, startWorkerProcess } from "./support/keel-workers";
import { type CpuWindow, measureCpu, procStatusBytes, sampleRss } from "./support/proc-stats";
import {
  fixed,
  intFromEnv,
  intListFromEnv,
  machineInfo,
  machineLine,
  ratio,
  runBenchmark,
  table,
  writeResults,
} from "./support/report";
import { benchSettings, median, runClient, runLsLoop } from "./support/runs";
import { type BenchStack, bundleWorkflows, startBenchStack } from "./support/stack";
import {
  type ActionCounts,
  countsSince,
  historyActions,
  serverActions,
  sumCounts,
  totalOf,
} from "./support/temporal-actions";
import { WORKER_MODE, type WorkerProcess } from "./support/worker-process";

const QUICK = process.env.BENCH_QUICK === "1";
const N_LIST = intListFromEnv("BENCH_N", QUICK ? [1, 10] : [1, 50, 100, 200]);
const REPEATS = intFromEnv("BENCH_REPEATS", 3);
const TOOL_TURNS = intFromEnv("BENCH_TOOL_TURNS", 2);
const LATENCY_MS = intFromEnv("BENCH_LATENCY_MS", QUICK ? 200 : 500);
const HISTORY_SAMPLE = intFromEnv("BENCH_HISTORY_SAMPLE", 20);
const COUNTED_RUNS = intFromEnv("BENCH_COUNTED_RUNS", QUICK ? 5 : 20);
const MODEL_CALLS = TOOL_TURNS + 1;
const IDEAL_MS = MODEL_CALLS * LATENCY_MS;
const RSS_SAMPLE_MS = 100;
/** Share of the machine's CPU used by processes other than the benchmark's that flags a batch noisy. */
const NOISY_OTHERS_SHARE = 0.2;
const MONTHLY_TURNS = 1_000_000;
const MB = 1024 * 1024;
const TARGETS = { fraction: 0.8, cpu: 1.5, rss: 1.5, s3PerTurn: 2.5 };

type Kind = "keel" | "shaped" | "bareIo" | "bare";
const KINDS: Kind[] = ["keel", "shaped", "bareIo", "bare"];
const LABEL: Record<Kind, string> = {
  keel: "Keel",
  shaped: "shaped bare",
  bareIo: "bare + I/O",
  bare: "bare",
};
const PROCESS_NAMES = ["worker", "Temporal dev server", "S3 server", "client + LLM server"] as const;

interface Batch extends CpuWindow {
  kind: Kind;
  n: number;
  repeat: number;
  wallMs: number;
  fraction: number;
  runMs: { median: number; max: number };
  /** CpuWindow.cpuSeconds in PROCESS_NAMES order; othersShare is other engineers' work. */
  noisy: boolean;
  workerRssBeforeBytes: number;
  workerRssPeakBytes: number;
  /** The dev server's `action` counter over the batch, by action type. */
  serverActions: ActionCounts;
  /** Histories of up to HISTORY_SAMPLE runs. */
  sampledRuns: number;
  breakdown: TimeBreakdown;
  historyActions: ActionCounts;
}

type Workers = Record<Kind, WorkerProcess>;
type Starters = Record<Kind, () => Promise<{ workflowId: string; wallMs: number }>>;

const QUEUES: Record<Kind, string> = {
  keel: "bench-concurrency-keel",
  shaped: "bench-concurrency-shaped",
  bareIo: "bench-concurrency-bare-io",
  bare: "bench-concurrency-bare",
};
/** The shaped workflow's tool activities run on their own queue, as a Keel run's do. */
const SHAPED_TOOL_QUEUE = `${QUEUES.shaped}/tools`;

function starters(stack: BenchStack): Starters {
  const runs = runClient(stack, QUEUES.keel);
  return {
    async keel() {
      const run = await runLsLoop(stack, runs, TOOL_TURNS);
      return { workflowId: runWorkflowId(run.ref), wallMs: run.wallMs };
    },
    async shaped() {
      // Started as RunClient starts a Keel run: update-with-start, accepted synchronously, with
      // the run's search attributes and a summary.
      const sessionId = `shaped-${randomUUID().slice(0, 12)}`;
      const workflowId = `bench/${sessionId}`;
      const started = performance.now();
      const startWorkflowOperation = new WithStartWorkflowOperation<typeof shapedTurns>("shapedTurns", {
        workflowId,
        taskQueue: QUEUES.shaped,
        args: [TOOL_TURNS, SHAPED_TOOL_QUEUE],
        typedSearchAttributes: runAttributes(
          { tenantId: "bench", sessionId, settings: benchSettings(TOOL_TURNS) },
          startedStatus(RUN_VERSION),
        ),
        workflowIdConflictPolicy: "FAIL",
        staticSummary: "list the workspace",
      });
      const update = await stack.client.workflow.startUpdateWithStart(shapedPromptUpdate, {
        args: ["list the workspace"],
        startWorkflowOperation,
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      await update.result();
      await stack.client.workflow.getHandle(workflowId).result();
      return { workflowId, wallMs: performance.now() - started };
    },
    bareIo: () => startBare(stack, QUEUES.bareIo),
    bare: () => startBare(stack, QUEUES.bare),
  };
}

/** Runs one bare workflow (no-op or I/O activities, by its queue's worker) to its end. */
async function startBare(stack: BenchStack, taskQueue: string) {
  const workflowId = `bare-${randomUUID().slice(0, 12)}`;
  const started = performance.now();
  await stack.client.workflow.execute("bareTurns", { workflowId, taskQueue, args: [TOOL_TURNS, true] });
  return { workflowId, wallMs: performance.now() - started };
}

async function measureBatch(
  stack: BenchStack,
  kind: Kind,
  n: number,
  repeat: number,
  worker: WorkerProcess,
  start: () => Promise<{ workflowId: string; wallMs: number }>,
): Promise<Batch> {
  const pids = [worker.pid, ...stack.servers().map((server) => server.pid), process.pid];
  const rssBefore = procStatusBytes(worker.pid, "VmRSS");
  const actionsBefore = await serverActions(stack.temporal.metricsUrl, stack.temporal.namespace);
  const rss = sampleRss(worker.pid, RSS_SAMPLE_MS);
  const started = performance.now();
  const { result: runs, cpu } = await measureCpu(pids, () => Promise.all(Array.from({ length: n }, start)));
  const wallMs = performance.now() - started;
  const rssPeak = rss.stop();
  const actionsAfter = await serverActions(stack.temporal.metricsUrl, stack.temporal.namespace);

  const sample = runs.slice(0, HISTORY_SAMPLE);
  const histories = await Promise.all(sample.map((run) => fetchEvents(stack.client, run.workflowId)));
  const runTimes = runs.map((run) => run.wallMs);
  return {
    kind,
    n,
    repeat,
    wallMs,
    fraction: IDEAL_MS / wallMs,
    runMs: { median: median(runTimes), max: Math.max(...runTimes) },
    ...cpu,
    noisy: cpu.othersShare > NOISY_OTHERS_SHARE,
    workerRssBeforeBytes: rssBefore,
    workerRssPeakBytes: rssPeak,
    serverActions: countsSince(actionsBefore, actionsAfter),
    sampledRuns: sample.length,
    breakdown: mergeBreakdowns(histories.map(timeBreakdown)),
    historyActions: sumCounts(histories.map(historyActions)),
  };
}

/** Counts the S3 requests of `runs` Keel runs at once through a counting proxy (own worker process). */
async function countS3Requests(stack: BenchStack, runs: number) {
  const proxy = await startCountingProxy(stack.s3.settings.endpoint!);
  const queue = "bench-concurrency-counted";
  const worker = await startWorkerProcess(stack, queue, { ...stack.s3.settings, endpoint: proxy.endpoint });
  try {
    const client = runClient(stack, queue);
    await Promise.all(Array.from({ length: runs }, () => runLsLoop(stack, client, TOOL_TURNS)));
    return Object.fromEntries(Object.entries(proxy.counts()).map(([kind, tally]) => [kind, tally.count]));
  } finally {
    await worker.stop();
    await proxy.close();
  }
}

const cpuPerRun = (batch: Batch) => batch.cpuSeconds.reduce((sum, used) => sum + used, 0) / batch.n;
const medianOf = (batches: Batch[], pick: (batch: Batch) => number) => median(batches.map(pick));
const perRun = (counts: ActionCounts, runs: number) =>
  Object.fromEntries(Object.entries(counts).map(([key, value]) => [key, value / runs]));

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(
    `run-concurrency: N = ${N_LIST.join(", ")} × ${REPEATS} repeats, ${MODEL_CALLS} model calls per run, latency ${LATENCY_MS} ms`,
  );
  const stack = await startBenchStack({ latencyMs: LATENCY_MS });
  const batches: Batch[] = [];
  let s3Requests: Record<string, number> = {};
  try {
    const benchBundle = await bundleWorkflows("bench/support/workflows.ts", stack.dir, "bench-workflows");
    registerBareIoScenario(stack.llm);
    const workers: Workers = {
      keel: await startWorkerProcess(stack, QUEUES.keel),
      shaped: await startBareWorkerProcess(
        stack,
        QUEUES.shaped,
        benchBundle,
        LATENCY_MS,
        MAX_CONCURRENT_ACTIVITIES,
        { toolTaskQueue: SHAPED_TOOL_QUEUE },
      ),
      bareIo: await startBareWorkerProcess(
        stack,
        QUEUES.bareIo,
        benchBundle,
        LATENCY_MS,
        MAX_CONCURRENT_ACTIVITIES,
        {
          io: {
            s3: stack.s3.settings,
            openaiBaseURL: stack.llm.openaiBaseURL,
            folder: join(stack.dir, "bare-io-workspace"),
          },
        },
      ),
      bare: await startBareWorkerProcess(
        stack,
        QUEUES.bare,
        benchBundle,
        LATENCY_MS,
        MAX_CONCURRENT_ACTIVITIES,
      ),
    };
    try {
      const start = starters(stack);
      // Warm-up: one run of each (JIT, workflow bundles loaded, connections open).
      for (const kind of KINDS) await start[kind]();
      for (let repeat = 0; repeat < REPEATS; repeat++) {
        for (const n of N_LIST) {
          const order: Kind[] = repeat % 2 === 0 ? [...KINDS] : [...KINDS].reverse();
          for (const kind of order) {
            const batch = await measureBatch(stack, kind, n, repeat, workers[kind], start[kind]);
            batches.push(batch);
            console.log(
              `repeat ${repeat} N=${n} ${kind}: ${fixed(batch.wallMs)} ms, fraction ${fixed(batch.fraction, 2)}, ` +
                `CPU ${fixed(cpuPerRun(batch), 3)} s/run, busy ${fixed(100 * batch.machineBusyShare, 0)}% ` +
                `(others ${fixed(100 * batch.othersShare, 0)}%), RSS peak ${fixed(batch.workerRssPeakBytes / MB)} MB`,
            );
          }
        }
      }
    } finally {
      for (const kind of KINDS) await workers[kind].stop();
    }
    s3Requests = await countS3Requests(stack, COUNTED_RUNS);
  } finally {
    await stack.close();
  }

  const of = (kind: Kind, n: number) => batches.filter((batch) => batch.kind === kind && batch.n === n);
  const summary = N_LIST.map((n) => {
    const keel = of("keel", n);
    const shaped = of("shaped", n);
    const bareIo = of("bareIo", n);
    const bare = of("bare", n);
    const all = [...keel, ...shaped, ...bareIo, ...bare];
    const row = {
      n,
      keelFraction: medianOf(keel, (batch) => batch.fraction),
      shapedFraction: medianOf(shaped, (batch) => batch.fraction),
      bareIoFraction: medianOf(bareIo, (batch) => batch.fraction),
      bareFraction: medianOf(bare, (batch) => batch.fraction),
      keelCpuPerRun: medianOf(keel, cpuPerRun),
      shapedCpuPerRun: medianOf(shaped, cpuPerRun),
      bareIoCpuPerRun: medianOf(bareIo, cpuPerRun),
      bareCpuPerRun: medianOf(bare, cpuPerRun),
      keelRssPeak: medianOf(keel, (batch) => batch.workerRssPeakBytes),
      shapedRssPeak: medianOf(shaped, (batch) => batch.workerRssPeakBytes),
      bareIoRssPeak: medianOf(bareIo, (batch) => batch.workerRssPeakBytes),
      bareRssPeak: medianOf(bare, (batch) => batch.workerRssPeakBytes),
      busyShare: medianOf(all, (batch) => batch.machineBusyShare),
      maxOthersShare: Math.max(...all.map((batch) => batch.othersShare)),
      noisy: all.filter((batch) => batch.noisy).length,
      cpuPerProcess: Object.fromEntries(
        KINDS.map((kind) => [
          kind,
          PROCESS_NAMES.map((_, index) => medianOf(of(kind, n), (batch) => batch.cpuSeconds[index]! / n)),
        ]),
      ) as Record<Kind, number[]>,
    };
    return row;
  });

  // Per-run counts from every sampled history (they do not depend on N).
  const perRunCounts = Object.fromEntries(
    KINDS.map((kind) => {
      const mine = batches.filter((batch) => batch.kind === kind);
      const runs = mine.reduce((sum, batch) => sum + batch.sampledRuns, 0);
      const breakdown = mergeBreakdowns(mine.map((batch) => batch.breakdown));
      const allRuns = mine.reduce((sum, batch) => sum + batch.n, 0);
      return [
        kind,
        {
          workflowTasks: breakdown.workflowTasks / runs,
          activities: breakdown.activities.reduce((sum, timing) => sum + timing.count, 0) / runs,
          events: breakdown.events / runs,
          historyActions: perRun(sumCounts(mine.map((batch) => batch.historyActions)), runs),
          serverActions: perRun(sumCounts(mine.map((batch) => batch.serverActions)), allRuns),
          breakdown,
          sampledRuns: runs,
        },
      ];
    }),
  ) as Record<
    Kind,
    {
      workflowTasks: number;
      activities: number;
      events: number;
      historyActions: ActionCounts;
      serverActions: ActionCounts;
      breakdown: TimeBreakdown;
      sampledRuns: number;
    }
  >;
  const s3PerRun = perRun(s3Requests, COUNTED_RUNS);
  const s3PerTurn = perRun(s3Requests, COUNTED_RUNS * MODEL_CALLS);
  const s3TotalPerTurn = totalOf(s3PerTurn);
  const actionsPerTurn = (kind: Kind) => totalOf(perRunCounts[kind].serverActions) / MODEL_CALLS;
  // bare + I/O writes one object per model call and per tool call.
  const bareIoS3PerRun = MODEL_CALLS + TOOL_TURNS;
  const bareIoS3PerTurn = { "PUT object": bareIoS3PerRun / MODEL_CALLS };
  const cost = costSection(
    [
      { label: "Keel", actionsPerTurn: actionsPerTurn("keel"), s3PerTurn },
      { label: "shaped bare", actionsPerTurn: actionsPerTurn("shaped"), s3PerTurn: {} },
      { label: "bare + I/O", actionsPerTurn: actionsPerTurn("bareIo"), s3PerTurn: bareIoS3PerTurn },
      { label: "bare", actionsPerTurn: actionsPerTurn("bare"), s3PerTurn: {} },
    ],
    MONTHLY_TURNS,
  );
  const largest = summary[summary.length - 1]!;
  const met = (ok: boolean) => (ok ? "met" : "NOT met");
  const noisyBatches = batches.filter((batch) => batch.noisy).length;

  const actionTypes = (kind: Kind) =>
    Object.entries(perRunCounts[kind].serverActions)
      .sort((a, b) => b[1] - a[1])
      .map(([type, count]) => `${type} ${fixed(count, 2)}`)
      .join(", ");
  const historyActionTypes = (kind: Kind) =>
    Object.entries(perRunCounts[kind].historyActions)
      .map(([type, count]) => `${type} ${fixed(count, 2)}`)
      .join(", ");

  const markdown = `# Run concurrency benchmark: Keel against a bare workflow

N runs started at once, for N = ${N_LIST.join(", ")}, each ${REPEATS} times, Keel, a "shaped bare", a "bare + I/O" and a bare workflow of the
same shape in turn (Keel, shaped, bare + I/O, bare on even repeats, the reverse on odd ones), on the same Temporal dev
server and S3 server, from one benchmark process. A Keel run: ${TOOL_TURNS} turns calling \`ls\`, then the answer
(${MODEL_CALLS} model calls, the local LLM server answering after ${LATENCY_MS} ms), delivered by update-with-start
(\`RunClient.deliver\`) to one Keel worker process (\`src/worker/main.ts\` ${WORKER_MODE === "compiled" ? "compiled with esbuild as the worker image does, run by node" : "under tsx"}, max ${MAX_CONCURRENT_ACTIVITIES} concurrent
activities). A bare run (\`bench/support/bare-workflow.ts\`, \`bareTurns(${TOOL_TURNS}, true)\`): the same ${perRunCounts.bare.activities.toFixed(0)}
activities in the same order, its "llm" activity sleeping ${LATENCY_MS} ms, the others returning at once, started
with \`client.workflow.execute\` on its own worker process (same activity slots, SDK defaults otherwise).
A shaped bare run (\`shapedTurns\` in the same file) does the same no work but uses Temporal as a Keel
run does: started by update-with-start (accepted synchronously) with Keel's four search attributes
and a summary, a status upsert when it ends, a summary on every activity, and its tool
activities on a second task queue served by a second, activity-only worker in its process (a Keel
run's tool calls go to the queue of the worker holding the workspace, so Temporal cannot hand them
to the worker eagerly with the workflow task that scheduled them). What shaped costs over bare is
the price of those Temporal features; what Keel costs over shaped is Keel's own work (S3, the model
call over HTTP, the workspace, its workflow code).
A bare + I/O run is the bare run on a worker process whose activities do the I/O a durable agent
turn cannot avoid (\`bench/support/bare-io-activities.ts\`): each "llm" activity streams a call to
the same local LLM server (answering after ${LATENCY_MS} ms) through the OpenAI SDK and stores the
answer as one S3 object, each "tool" activity lists a folder and stores the listing (conditional
creates, as session entries are). What Keel costs over it is Keel's own work beyond that I/O.
Ideal: every run in parallel, so a batch takes ${MODEL_CALLS} × ${LATENCY_MS} ms = ${IDEAL_MS} ms; fraction of ideal =
ideal ÷ measured batch time. Figures are medians over the repeats.

**Shared machine.** ${machineLine(machine)} Other engineers were running tests on the same
machine during this run: each batch records the machine's busy share (/proc/stat) and the part of it
not used by the benchmark's four processes ("others"); ${noisyBatches} of ${batches.length} batches had others above
${fixed(100 * NOISY_OTHERS_SHARE, 0)}% of the machine and are flagged noisy in the last table (kept, not dropped).
Generated by \`npx tsx bench/run-concurrency.ts\` (BENCH_N=${N_LIST.join(",")}, BENCH_REPEATS=${REPEATS}, BENCH_TOOL_TURNS=${TOOL_TURNS}, BENCH_LATENCY_MS=${LATENCY_MS}${QUICK ? ", BENCH_QUICK=1" : ""}).

## Keel ÷ bare

${table(
  [
    "N",
    "fraction of ideal: Keel",
    "bare",
    "Keel ÷ bare",
    "CPU s per run (all processes): Keel",
    "bare",
    "Keel ÷ bare",
    "worker peak RSS: Keel",
    "bare",
    "Keel ÷ bare",
    "machine busy",
    "others (max)",
  ],
  summary.map((row) => [
    row.n,
    fixed(row.keelFraction, 2),
    fixed(row.bareFraction, 2),
    fixed(row.keelFraction / row.bareFraction, 2),
    fixed(row.keelCpuPerRun, 3),
    fixed(row.bareCpuPerRun, 3),
    ratio(row.keelCpuPerRun / row.bareCpuPerRun),
    `${fixed(row.keelRssPeak / MB)} MB`,
    `${fixed(row.bareRssPeak / MB)} MB`,
    ratio(row.keelRssPeak / row.bareRssPeak),
    `${fixed(100 * row.busyShare, 0)}%`,
    `${fixed(100 * row.maxOthersShare, 0)}%`,
  ]),
)}

Targets at N = ${largest.n}: Keel ÷ bare fraction of ideal ≥ ${TARGETS.fraction}: ${fixed(largest.keelFraction / largest.bareFraction, 2)} (${met(largest.keelFraction / largest.bareFraction >= TARGETS.fraction)});
CPU per run Keel ÷ bare ≤ ${TARGETS.cpu}×: ${ratio(largest.keelCpuPerRun / largest.bareCpuPerRun)} (${met(largest.keelCpuPerRun / largest.bareCpuPerRun <= TARGETS.cpu)});
worker peak RSS Keel ÷ bare ≤ ${TARGETS.rss}×: ${ratio(largest.keelRssPeak / largest.bareRssPeak)} (${met(largest.keelRssPeak / largest.bareRssPeak <= TARGETS.rss)}).
The worker's peak RSS is sampled every ${RSS_SAMPLE_MS} ms during the batch; a worker keeps the memory it grew to
in earlier batches, so it is the high-water mark up to that batch. Both workers run ${WORKER_MODE === "compiled" ? "compiled (esbuild, one file, packages from node_modules)" : "through tsx"}; the bare
worker loads only the Temporal SDK (the bare + I/O one also the S3 and OpenAI SDKs), Keel's also the S3 and OpenAI SDKs (the Anthropic SDK loads at a worker's first Anthropic call).
Both workflow bundles are built as the deployed one is (\`infra/bundling/deployed-bundle.ts\`: a small source map).

## Keel's use of Temporal against its own work

${table(
  [
    "N",
    "fraction of ideal: shaped bare",
    "shaped ÷ bare",
    "Keel ÷ shaped",
    "CPU s per run: shaped bare",
    "shaped ÷ bare",
    "Keel ÷ shaped",
    "worker peak RSS: shaped bare",
    "shaped ÷ bare",
    "Keel ÷ shaped",
  ],
  summary.map((row) => [
    row.n,
    fixed(row.shapedFraction, 2),
    fixed(row.shapedFraction / row.bareFraction, 2),
    fixed(row.keelFraction / row.shapedFraction, 2),
    fixed(row.shapedCpuPerRun, 3),
    ratio(row.shapedCpuPerRun / row.bareCpuPerRun),
    ratio(row.keelCpuPerRun / row.shapedCpuPerRun),
    `${fixed(row.shapedRssPeak / MB)} MB`,
    ratio(row.shapedRssPeak / row.bareRssPeak),
    ratio(row.keelRssPeak / row.shapedRssPeak),
  ]),
)}

Of Keel's extra CPU per run over bare at N = ${largest.n}, ${fixed((100 * (largest.shapedCpuPerRun - largest.bareCpuPerRun)) / (largest.keelCpuPerRun - largest.bareCpuPerRun), 0)}% is the shaped workflow's: Temporal
features a run uses, paid by the dev server and the worker's SDK whatever the activities do.

## Keel against the same I/O

${table(
  [
    "N",
    "fraction of ideal: bare + I/O",
    "Keel ÷ bare + I/O",
    "bare + I/O ÷ bare",
    "CPU s per run: bare + I/O",
    "Keel ÷ bare + I/O",
    "bare + I/O ÷ bare",
    "worker peak RSS: bare + I/O",
    "Keel ÷ bare + I/O",
    "bare + I/O ÷ bare",
  ],
  summary.map((row) => [
    row.n,
    fixed(row.bareIoFraction, 2),
    fixed(row.keelFraction / row.bareIoFraction, 2),
    fixed(row.bareIoFraction / row.bareFraction, 2),
    fixed(row.bareIoCpuPerRun, 3),
    ratio(row.keelCpuPerRun / row.bareIoCpuPerRun),
    ratio(row.bareIoCpuPerRun / row.bareCpuPerRun),
    `${fixed(row.bareIoRssPeak / MB)} MB`,
    ratio(row.keelRssPeak / row.bareIoRssPeak),
    ratio(row.bareIoRssPeak / row.bareRssPeak),
  ]),
)}

What bare + I/O costs over bare is the I/O any durable agent turn does (a model call over HTTP
through the OpenAI SDK, one S3 write per activity) and the SDKs that do it; what Keel costs over
bare + I/O is the rest of Keel's work (its session format and entry cache, the workspace and its
lock, live events, its workflow code) and the Temporal features of the shaped workflow.

## CPU seconds per run, by process (medians)

${table(
  ["N", "workflow", ...PROCESS_NAMES],
  summary.flatMap((row) =>
    KINDS.map((kind) => [row.n, LABEL[kind], ...row.cpuPerProcess[kind].map((value) => fixed(value, 4))]),
  ),
  ["---:", "---", "---:", "---:", "---:", "---:"],
)}

"client + LLM server" is this benchmark process: the Temporal client starting runs and waiting for
results, and (Keel and bare + I/O) the local LLM server answering the model calls; the bare and
shaped workflows' model is a sleep in their worker.

## Per run: Temporal work and S3 requests

From ${perRunCounts.keel.sampledRuns} Keel, ${perRunCounts.shaped.sampledRuns} shaped, ${perRunCounts.bareIo.sampledRuns} bare + I/O and ${perRunCounts.bare.sampledRuns} bare histories (up to ${HISTORY_SAMPLE} per batch) and the dev server's \`action\` counter (every run):

${table(
  ["per run", "Keel", "shaped bare", "bare + I/O", "bare", "Keel ÷ bare"],
  (
    [
      ["workflow tasks", (kind) => perRunCounts[kind].workflowTasks],
      ["activities", (kind) => perRunCounts[kind].activities],
      ["history events", (kind) => perRunCounts[kind].events],
      ["billable Actions, from the histories", (kind) => totalOf(perRunCounts[kind].historyActions)],
      ["Actions, dev server's `action` counter", (kind) => totalOf(perRunCounts[kind].serverActions)],
    ] as [string, (kind: Kind) => number][]
  )
    .map(([label, count]) => [
      label,
      fixed(count("keel"), 2),
      fixed(count("shaped"), 2),
      fixed(count("bareIo"), 2),
      fixed(count("bare"), 2),
      ratio(count("keel") / count("bare")),
    ])
    .concat([["S3 requests", fixed(totalOf(s3PerRun), 2), "0", `${bareIoS3PerRun} (one per call)`, "0", ""]]),
  ["---", "---:", "---:", "---:", "---:", "---:"],
)}

- Actions from the histories, by category — Keel: ${historyActionTypes("keel")}; shaped bare: ${historyActionTypes("shaped")}; bare + I/O: ${historyActionTypes("bareIo")}; bare: ${historyActionTypes("bare")}.
- The dev server's counter, by type — Keel: ${actionTypes("keel")}; shaped bare: ${actionTypes("shaped")}; bare + I/O: ${actionTypes("bareIo")}; bare: ${actionTypes("bare")}.
  It also sees what histories do not hold (activity heartbeats, queries). It counts in this run's
  namespace everything between the batch's first start and last result, so the benchmark's own
  client calls are in it (no queries are made during a batch).
- S3 requests of ${COUNTED_RUNS} Keel runs at once, counted by a proxy in front of the S3 server (a separate
  worker process, not timed): ${Object.entries(s3PerRun)
    .sort()
    .map(([kind, count]) => `${kind} ${fixed(count, 2)}`)
    .join(", ")} per run,
  **${fixed(s3TotalPerTurn, 2)} per turn** (target ≤ ${TARGETS.s3PerTurn}: ${met(s3TotalPerTurn <= TARGETS.s3PerTurn)}).

## Cost per turn

A turn here is one model call (a run of this shape has ${MODEL_CALLS}); the run's start (workflow start, the
update that delivers the prompt, openSession, claimWorkspace) is spread over its ${MODEL_CALLS} turns, so longer
runs cost less per turn (bench/results/run-overhead.md has the same figures for long runs). Actions per
turn from the dev server's counter (heartbeats included).

${cost.markdown}

## Where a run's time goes at N = ${largest.n}

Mean per run from the sampled histories of all repeats (queue = scheduled → started, run = started → completed):

${table(
  ["workflow", "activity", "per run", "queue ms", "run ms"],
  KINDS.flatMap((kind) => {
    const breakdown = mergeBreakdowns(of(kind, largest.n).map((batch) => batch.breakdown));
    const runs = of(kind, largest.n).reduce((sum, batch) => sum + batch.sampledRuns, 0);
    return [
      ...breakdown.activities.map((timing) => [
        LABEL[kind],
        timing.activity,
        fixed(timing.count / runs, 2),
        fixed(timing.meanQueueMs),
        fixed(timing.meanRunMs),
      ]),
      [
        LABEL[kind],
        "_no activity scheduled or running (workflow tasks)_",
        "",
        "",
        fixed(breakdown.betweenActivitiesMs / runs),
      ],
    ];
  }),
  ["---", "---", "---:", "---:", "---:"],
)}

## Every batch

${table(
  [
    "repeat",
    "N",
    "workflow",
    "batch ms",
    "fraction",
    "run ms median / max",
    "CPU s",
    "machine busy",
    "others",
    "worker RSS before → peak",
    "",
  ],
  batches.map((batch) => [
    batch.repeat + 1,
    batch.n,
    LABEL[batch.kind],
    fixed(batch.wallMs),
    fixed(batch.fraction, 2),
    `${fixed(batch.runMs.median)} / ${fixed(batch.runMs.max)}`,
    fixed(
      batch.cpuSeconds.reduce((sum, used) => sum + used, 0),
      2,
    ),
    `${fixed(100 * batch.machineBusyShare, 0)}%`,
    `${fixed(100 * batch.othersShare, 0)}%`,
    `${fixed(batch.workerRssBeforeBytes / MB)} → ${fixed(batch.workerRssPeakBytes / MB)} MB`,
    batch.noisy ? "**noisy**" : "",
  ]),
  ["---:", "---:", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---"],
)}
`;
  const path = writeResults(QUICK ? "run-concurrency-quick" : "run-concurrency", markdown, {
    machine,
    sharedMachine: true,
    parameters: {
      n: N_LIST,
      repeats: REPEATS,
      toolTurns: TOOL_TURNS,
      modelCalls: MODEL_CALLS,
      latencyMs: LATENCY_MS,
      idealMs: IDEAL_MS,
      historySample: HISTORY_SAMPLE,
      countedRuns: COUNTED_RUNS,
      quick: QUICK,
    },
    summary,
    perRun: perRunCounts,
    s3RequestsPerRun: s3PerRun,
    s3RequestsPerTurn: s3TotalPerTurn,
    monthlyCost: cost.costs,
    batches,
  });
  console.log(markdown);
  console.log(`wrote ${path}`);
}

runBenchmark(main);
