/**
 * Concurrency: N runs started at once on one Keel worker process, the model answering every
 * request after a fixed latency (default 500 ms), each run a few turns (default 2 `ls` turns and
 * the answer: 3 model calls). Ideal = every run progressing in parallel, so the batch takes
 * model calls × latency; reported is that ideal ÷ the measured time, for one run alone (the
 * baseline, same run) and for N at once, and the worker process's resident memory.
 *
 * Run: npx tsx bench/run-concurrency.ts   (BENCH_RUNS=200, BENCH_TOOL_TURNS=2, BENCH_LATENCY_MS=500)
 * Writes bench/results/run-concurrency.md and .json.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { runWorkflowId } from "../src/workflows/types";
import { fetchEvents, mergeBreakdowns, timeBreakdown } from "./support/history";
import { MAX_CONCURRENT_ACTIVITIES, startWorkerProcess } from "./support/keel-workers";
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
import { type KeelRun, median, runClient, runLsLoop } from "./support/runs";
import { startBenchStack } from "./support/stack";

const RUNS = intFromEnv("BENCH_RUNS", 200);
const TOOL_TURNS = intFromEnv("BENCH_TOOL_TURNS", 2);
const LATENCY_MS = intFromEnv("BENCH_LATENCY_MS", 500);
const MODEL_CALLS = TOOL_TURNS + 1;
const IDEAL_MS = MODEL_CALLS * LATENCY_MS;
const SAMPLE_INTERVAL_MS = 100;
/** Share of the machine's CPU above which the batch counts as CPU-bound. */
const CPU_SATURATED = 0.8;
const MB = 1024 * 1024;

/** A `Vm*` line of /proc/<pid>/status in bytes (Linux only). */
function procStatusBytes(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

const CLOCK_TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (Linux only). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces) start at the state, field 3.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`run-concurrency: ${RUNS} runs × ${MODEL_CALLS} model calls, latency ${LATENCY_MS} ms`);
  const stack = await startBenchStack({ latencyMs: LATENCY_MS });
  try {
    const worker = await startWorkerProcess(stack, "bench-concurrency");
    const runs = runClient(stack, "bench-concurrency");
    const rssAtStart = procStatusBytes(worker.pid, "VmRSS");

    // Warm-up, then the baseline: one run alone.
    await runLsLoop(stack, runs, TOOL_TURNS);
    const single = await runLsLoop(stack, runs, TOOL_TURNS);
    const rssBefore = procStatusBytes(worker.pid, "VmRSS");
    console.log(`one run alone: ${fixed(single.wallMs)} ms (ideal ${IDEAL_MS} ms)`);

    let rssPeakSampled = rssBefore;
    const sampler = setInterval(() => {
      rssPeakSampled = Math.max(rssPeakSampled, procStatusBytes(worker.pid, "VmRSS"));
    }, SAMPLE_INTERVAL_MS);
    const processes = {
      "Keel worker": worker.pid,
      "Temporal dev server": stack.temporal.process.pid,
      "S3 server (SeaweedFS)": stack.s3.process.pid,
      "benchmark (client + LLM server)": process.pid,
    };
    const cpuBefore = Object.values(processes).map(cpuSeconds);
    const started = performance.now();
    const batch: KeelRun[] = await Promise.all(
      Array.from({ length: RUNS }, () => runLsLoop(stack, runs, TOOL_TURNS)),
    );
    const batchMs = performance.now() - started;
    const cpuUsed = Object.values(processes).map((pid, index) => cpuSeconds(pid) - cpuBefore[index]!);
    const cpuAvailable = (machine.nproc * batchMs) / 1000;
    clearInterval(sampler);
    const rssHighWater = procStatusBytes(worker.pid, "VmHWM");
    const rssAfter = procStatusBytes(worker.pid, "VmRSS");
    await worker.stop();
    const breakdown = mergeBreakdowns(
      await Promise.all(
        batch.map(async (run) => timeBreakdown(await fetchEvents(stack.client, runWorkflowId(run.ref)))),
      ),
    );
    const singleBreakdown = timeBreakdown(await fetchEvents(stack.client, runWorkflowId(single.ref)));

    const runTimes = batch.map((run) => run.wallMs);
    const singleFraction = IDEAL_MS / single.wallMs;
    const batchFraction = IDEAL_MS / batchMs;
    const throughput = RUNS / (batchMs / 1000);
    const idealThroughput = RUNS / (IDEAL_MS / 1000);
    const markdown = `# Run concurrency benchmark

${RUNS} runs started at once (all deliveries in flight together) on one Keel worker process
(\`src/worker/main.ts\`, max ${MAX_CONCURRENT_ACTIVITIES} concurrent activities), the local LLM server answering every
request after ${LATENCY_MS} ms. Each run: ${TOOL_TURNS} turns calling \`ls\`, then the answer
(${MODEL_CALLS} model calls). Ideal: every run progresses in parallel, so the whole batch takes
${MODEL_CALLS} × ${LATENCY_MS} ms = ${IDEAL_MS} ms. Fraction of ideal = ideal time ÷ measured time
(= measured throughput ÷ ideal throughput). The baseline is one run alone, measured in the same run
after one warm-up run.

${machineLine(machine)}
Generated by \`npx tsx bench/run-concurrency.ts\` (BENCH_RUNS=${RUNS}, BENCH_TOOL_TURNS=${TOOL_TURNS}, BENCH_LATENCY_MS=${LATENCY_MS}).

${table(
  ["", "time", "fraction of ideal", "throughput"],
  [
    [
      "1 run alone (baseline)",
      `${fixed(single.wallMs)} ms`,
      fixed(singleFraction, 2),
      `${fixed(1000 / single.wallMs, 2)} runs/s`,
    ],
    [
      `${RUNS} runs at once`,
      `${fixed(batchMs)} ms`,
      fixed(batchFraction, 2),
      `${fixed(throughput, 1)} runs/s (ideal ${fixed(idealThroughput, 1)})`,
    ],
  ],
  ["---", "---:", "---:", "---:"],
)}

- ${RUNS} at once ÷ one alone, fraction of ideal: **${ratio(batchFraction / singleFraction)}**;
  time of the batch ÷ time of one run: ${ratio(batchMs / single.wallMs)} for ${RUNS}× the work.
- Per-run time within the batch: median ${fixed(median(runTimes))} ms, p95 ${fixed(percentile(runTimes, 95))} ms, max ${fixed(Math.max(...runTimes))} ms.

Where a run's time goes, from the histories (mean per run; queue = scheduled → started,
run = started → completed):

${table(
  ["activity", "per run", "alone: queue ms", "alone: run ms", "batch: queue ms", "batch: run ms"],
  breakdown.activities.map((timing) => {
    const alone = singleBreakdown.activities.find((candidate) => candidate.activity === timing.activity);
    return [
      timing.activity,
      fixed(timing.count / RUNS, 2),
      alone ? fixed(alone.meanQueueMs) : "",
      alone ? fixed(alone.meanRunMs) : "",
      fixed(timing.meanQueueMs),
      fixed(timing.meanRunMs),
    ];
  }),
  ["---", "---:", "---:", "---:", "---:", "---:"],
)}

Time with no activity scheduled or running (workflow tasks), per run: alone ${fixed(singleBreakdown.betweenActivitiesMs)} ms,
in the batch ${fixed(breakdown.betweenActivitiesMs / RUNS)} ms (history start to end: alone ${fixed(singleBreakdown.totalMs)} ms,
batch mean ${fixed(breakdown.totalMs / RUNS)} ms).

CPU time used during the batch (user + system, /proc/<pid>/stat), against the
${fixed(cpuAvailable)} CPU-seconds the machine's ${machine.nproc} CPUs offered in that time:

${table(
  ["process", "CPU s", "share of available"],
  Object.keys(processes).map((name, index) => [
    name,
    fixed(cpuUsed[index]!),
    `${fixed((100 * cpuUsed[index]!) / cpuAvailable, 0)}%`,
  ]),
  ["---", "---:", "---:"],
)}

${
  cpuUsed.reduce((sum, used) => sum + used, 0) < CPU_SATURATED * cpuAvailable
    ? `These processes used ${fixed((100 * cpuUsed.reduce((sum, used) => sum + used, 0)) / cpuAvailable, 0)}% of the CPU
available, so the batch was not CPU-bound: its runs spent most of their time between activities
(waiting on workflow tasks). Which limit holds them (the worker's workflow-task slots and pollers,
its workflow cache, the dev server's SQLite store) is not measured here.`
    : "The machine's CPUs were close to saturated during the batch."
}

Worker process memory (resident set, /proc/<pid>/status):

${table(
  ["moment", "RSS"],
  [
    ["after start", `${fixed(rssAtStart / MB)} MB`],
    ["after the baseline runs", `${fixed(rssBefore / MB)} MB`],
    [`peak during the batch (sampled every ${SAMPLE_INTERVAL_MS} ms)`, `${fixed(rssPeakSampled / MB)} MB`],
    ["high-water mark (VmHWM)", `${fixed(rssHighWater / MB)} MB`],
    ["after the batch", `${fixed(rssAfter / MB)} MB`],
  ],
  ["---", "---:"],
)}

Peak ÷ before the batch: **${ratio(rssHighWater / rssBefore)}**; ${fixed((rssHighWater - rssBefore) / RUNS / 1024)} KB per concurrent run.
The worker runs under \`node --import tsx\` (TypeScript compiled at load), as the local stack starts it.
`;
    const path = writeResults("run-concurrency", markdown, {
      machine,
      parameters: {
        runs: RUNS,
        toolTurns: TOOL_TURNS,
        modelCalls: MODEL_CALLS,
        latencyMs: LATENCY_MS,
        idealMs: IDEAL_MS,
      },
      singleMs: single.wallMs,
      batchMs,
      singleFraction,
      batchFraction,
      runTimesMs: { median: median(runTimes), p95: percentile(runTimes, 95), max: Math.max(...runTimes) },
      cpuSecondsDuringBatch: Object.fromEntries(
        Object.keys(processes).map((name, index) => [name, cpuUsed[index]]),
      ),
      breakdownSingle: singleBreakdown,
      breakdownBatch: breakdown,
      rssBytes: {
        atStart: rssAtStart,
        beforeBatch: rssBefore,
        peakSampled: rssPeakSampled,
        highWater: rssHighWater,
        after: rssAfter,
      },
    });
    console.log(markdown);
    console.log(`wrote ${path}`);
  } finally {
    await stack.close();
  }
}

runBenchmark(main);
