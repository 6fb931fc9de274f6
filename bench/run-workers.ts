/**
 * Several worker processes: N runs at once (default 100; 2 `ls` turns and the answer, the model
 * answering after 500 ms) on K Keel worker processes sharing one task queue, for K = 1, 2, 4
 * (K = 1 is the baseline, same run). From the histories (each event names the worker that took
 * the task, `pid@host`): activities and workflow tasks per worker, and how long activities waited
 * to be picked up (scheduled → started) on each worker; with the worker processes' CPU seconds and
 * peak RSS. Tool calls go to the worker holding the run's workspace (its own task queue), so a
 * run's tools stay on the worker whose claimWorkspace took the run.
 *
 * Run: npx tsx bench/run-workers.ts   (BENCH_WORKERS=1,2,4, BENCH_RUNS=100, BENCH_TOOL_TURNS=2,
 * BENCH_LATENCY_MS=500)
 * Writes bench/results/run-workers.md and .json.
 */
import { temporal } from "@temporalio/proto";
import { runWorkflowId } from "../src/contracts/runs";
import { fetchEvents } from "./support/history";
import { startWorkerProcess } from "./support/keel-workers";
import { type CpuWindow, measureCpu, sampleRss } from "./support/proc-stats";
import {
  fixed,
  intFromEnv,
  intListFromEnv,
  machineInfo,
  machineLine,
  runBenchmark,
  table,
  writeResults,
} from "./support/report";
import { median, runClient, runLsLoop } from "./support/runs";
import { type BenchStack, startBenchStack } from "./support/stack";

const WORKER_COUNTS = intListFromEnv("BENCH_WORKERS", [1, 2, 4]);
const RUNS = intFromEnv("BENCH_RUNS", 100);
const TOOL_TURNS = intFromEnv("BENCH_TOOL_TURNS", 2);
const LATENCY_MS = intFromEnv("BENCH_LATENCY_MS", 500);
const IDEAL_MS = (TOOL_TURNS + 1) * LATENCY_MS;
const RSS_SAMPLE_MS = 100;
const NOISY_OTHERS_SHARE = 0.2;
const MB = 1024 * 1024;
const EventType = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

interface WorkerShare {
  pid: number;
  activities: Record<string, number>;
  workflowTasks: number;
  /** Scheduled → started of the activities this worker took, ms. */
  queueMs: number[];
  cpuSeconds: number;
  rssPeakBytes: number;
}

interface Round {
  workers: number;
  batchMs: number;
  fraction: number;
  cpu: CpuWindow;
  perWorker: WorkerShare[];
  /** Tasks taken by a worker identity that is none of this round's processes (should be none). */
  unattributed: number;
}

const eventMs = (event: HistoryEvent) =>
  Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
const pidOf = (identity: string | null | undefined) => Number((identity ?? "").split("@")[0]);

async function measureRound(stack: BenchStack, count: number): Promise<Round> {
  const taskQueue = `bench-workers-${count}`;
  const workers = await Promise.all(
    Array.from({ length: count }, () => startWorkerProcess(stack, taskQueue)),
  );
  try {
    const runs = runClient(stack, taskQueue);
    await runLsLoop(stack, runs, TOOL_TURNS); // warm-up
    const samplers = workers.map((worker) => sampleRss(worker.pid, RSS_SAMPLE_MS));
    const pids = workers.map((worker) => worker.pid);
    // The stack's own processes are measured too, so "others" is only work from outside the benchmark.
    const stackPids = [...stack.servers().map((server) => server.pid), process.pid];
    const started = performance.now();
    const { result: batch, cpu } = await measureCpu([...pids, ...stackPids], () =>
      Promise.all(Array.from({ length: RUNS }, () => runLsLoop(stack, runs, TOOL_TURNS))),
    );
    const batchMs = performance.now() - started;
    const rssPeaks = samplers.map((sampler) => sampler.stop());

    const shares = new Map<number, WorkerShare>(
      pids.map((pid, index) => [
        pid,
        {
          pid,
          activities: {},
          workflowTasks: 0,
          queueMs: [],
          cpuSeconds: cpu.cpuSeconds[index]!,
          rssPeakBytes: rssPeaks[index]!,
        },
      ]),
    );
    let unattributed = 0;
    const histories = await Promise.all(
      batch.map((run) => fetchEvents(stack.client, runWorkflowId(run.ref))),
    );
    for (const events of histories) {
      const scheduled = new Map<string, HistoryEvent>();
      for (const event of events) {
        if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
          scheduled.set(String(event.eventId), event);
        const activityStart = event.activityTaskStartedEventAttributes;
        const taskStart = event.workflowTaskStartedEventAttributes;
        const identity = activityStart?.identity ?? taskStart?.identity;
        if (!identity) continue;
        const share = shares.get(pidOf(identity));
        if (!share) {
          unattributed += 1;
          continue;
        }
        if (taskStart) share.workflowTasks += 1;
        if (activityStart) {
          const schedule = scheduled.get(String(activityStart.scheduledEventId));
          const type = schedule?.activityTaskScheduledEventAttributes?.activityType?.name ?? "unknown";
          share.activities[type] = (share.activities[type] ?? 0) + 1;
          if (schedule) share.queueMs.push(eventMs(event) - eventMs(schedule));
        }
      }
    }
    return {
      workers: count,
      batchMs,
      fraction: IDEAL_MS / batchMs,
      cpu,
      perWorker: [...shares.values()],
      unattributed,
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const total = (counts: Record<string, number>) =>
  Object.values(counts).reduce((sum, count) => sum + count, 0);

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`run-workers: ${RUNS} runs at once on ${WORKER_COUNTS.join(", ")} worker processes`);
  const stack = await startBenchStack({ latencyMs: LATENCY_MS });
  const rounds: Round[] = [];
  try {
    for (const count of WORKER_COUNTS) {
      const round = await measureRound(stack, count);
      rounds.push(round);
      console.log(
        `${count} workers: ${fixed(round.batchMs)} ms, fraction ${fixed(round.fraction, 2)}, activities per worker ` +
          round.perWorker.map((share) => total(share.activities)).join(" / "),
      );
    }
  } finally {
    await stack.close();
  }

  const workerRows = rounds.flatMap((round) =>
    round.perWorker.map((share, index) => [
      round.workers,
      index + 1,
      total(share.activities),
      ["openSession", "claimWorkspace", "llmTurn", "executeTool"]
        .map((type) => `${type} ${share.activities[type] ?? 0}`)
        .join(", "),
      share.workflowTasks,
      fixed(median(share.queueMs.length ? share.queueMs : [0])),
      fixed(percentile(share.queueMs, 95)),
      fixed(share.cpuSeconds, 1),
      `${fixed(share.rssPeakBytes / MB)} MB`,
    ]),
  );
  const markdown = `# Several worker processes

${RUNS} runs started at once (${TOOL_TURNS} \`ls\` turns and the answer, the local LLM server answering after ${LATENCY_MS} ms;
ideal batch time ${IDEAL_MS} ms) on K Keel worker processes (\`src/worker/main.ts\`) polling one task queue, for
K = ${WORKER_COUNTS.join(", ")}, one after the other on the same Temporal dev server and S3 server. Which worker took
each task comes from the histories (the worker identity on each started event). Queue = activity
scheduled → started.

**Shared machine.** ${machineLine(machine)} Other engineers' work ran on the same machine; the machine's busy
share and the part of it not used by the benchmark's processes (the workers, the Temporal dev server, the S3 server and
this process, which runs the client and the LLM server) are recorded per round. With ${machine.nproc} CPUs, more worker
processes cannot make the batch faster here: what this shows is how work spreads, not speed-up.
Generated by \`npx tsx bench/run-workers.ts\` (BENCH_WORKERS=${WORKER_COUNTS.join(",")}, BENCH_RUNS=${RUNS}, BENCH_TOOL_TURNS=${TOOL_TURNS}, BENCH_LATENCY_MS=${LATENCY_MS}).

${table(
  [
    "workers",
    "batch ms",
    "fraction of ideal",
    "activities per worker (min / max)",
    "machine busy",
    "others",
    "",
  ],
  rounds.map((round) => {
    const counts = round.perWorker.map((share) => total(share.activities));
    return [
      round.workers,
      fixed(round.batchMs),
      fixed(round.fraction, 2),
      `${Math.min(...counts)} / ${Math.max(...counts)}`,
      `${fixed(100 * round.cpu.machineBusyShare, 0)}%`,
      `${fixed(100 * round.cpu.othersShare, 0)}%`,
      round.cpu.othersShare > NOISY_OTHERS_SHARE ? "**noisy**" : "",
    ];
  }),
  ["---:", "---:", "---:", "---:", "---:", "---:", "---"],
)}

## Per worker

${table(
  [
    "workers",
    "worker",
    "activities",
    "by type",
    "workflow tasks",
    "queue ms median",
    "queue ms p95",
    "CPU s",
    "peak RSS",
  ],
  workerRows,
  ["---:", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---:"],
)}

Tasks taken by no worker of the round (should be 0): ${rounds.map((round) => `${round.workers} workers: ${round.unattributed}`).join(", ")}.
A worker's queue times show whether runs waited on it while another had room: with the runs
spread, the medians and p95 of the workers of a round are close to each other.
`;
  const path = writeResults("run-workers", markdown, {
    machine,
    parameters: { workers: WORKER_COUNTS, runs: RUNS, toolTurns: TOOL_TURNS, latencyMs: LATENCY_MS },
    rounds: rounds.map((round) => ({
      ...round,
      perWorker: round.perWorker.map((share) => ({
        ...share,
        queueMs: {
          median: median(share.queueMs.length ? share.queueMs : [0]),
          p95: percentile(share.queueMs, 95),
        },
      })),
    })),
  });
  console.log(markdown);
  console.log(`wrote ${path}`);
}

runBenchmark(main);
