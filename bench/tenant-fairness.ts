/**
 * Fairness between tenants on one shared stack. Tenant A starts BENCH_A_RUNS runs at once while
 * tenant B starts one run every BENCH_B_INTERVAL_MS; B's time to first token (from its start
 * request to the model server's first streamed delta of its first call) and run duration (to its
 * result) are compared, p50 and p95, against B alone on the same stack just before. Every run is
 * one `ls` turn and the answer (two model calls, each answering after BENCH_LATENCY_MS). One
 * worker process with BENCH_WORKER_SLOTS activity slots serves the queue, so A's burst is a
 * backlog on it: what fairness is for. The whole comparison runs twice, on a dev server with
 * dispatch by fairness key on (as the local stack runs it) and off (arrival order), and once more
 * with fairness on and A under a concurrent-run quota of BENCH_A_CONCURRENT (`admission`: the
 * API's own admission code, `QuotaGate`, with A's clients retrying after `Retry-After` plus up to
 * 1 s of jitter), each on its own fresh stack. Goal: B's p95 under A's burst within 1.5× of B
 * alone.
 *
 * Run: npx tsx bench/tenant-fairness.ts
 *   BENCH_A_RUNS=200  BENCH_B_RUNS=8  BENCH_B_INTERVAL_MS=3000  BENCH_LATENCY_MS=1000
 *   BENCH_WORKER_SLOTS=20  BENCH_A_CONCURRENT=10  BENCH_MODES=on,off,admission
 * Writes bench/results/tenant-fairness.md and .json.
 */
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { tenantServices } from "../src/api/tenant-runs";
import { type RunResult, runWorkflowId } from "../src/contracts/runs";
import type { RunClient } from "../src/run-client/run-client";
import { createS3Client } from "../src/store/s3-config";
import { QuotaExceededError, type QuotaGate } from "../src/tenants/admission";
import type { Quotas } from "../src/tenants/types";
import { startWorkerProcess } from "./support/keel-workers";
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
import { benchSettings, runClient } from "./support/runs";
import { type BenchStack, startBenchStack } from "./support/stack";

const A_RUNS = intFromEnv("BENCH_A_RUNS", 200);
const B_RUNS = intFromEnv("BENCH_B_RUNS", 8);
const B_INTERVAL_MS = intFromEnv("BENCH_B_INTERVAL_MS", 3_000);
const LATENCY_MS = intFromEnv("BENCH_LATENCY_MS", 1_000);
const WORKER_SLOTS = intFromEnv("BENCH_WORKER_SLOTS", 20);
const A_CONCURRENT = intFromEnv("BENCH_A_CONCURRENT", 10);
const MODE_NAMES = ["on", "off", "admission"] as const;
type ModeName = (typeof MODE_NAMES)[number];
const MODES = (process.env.BENCH_MODES ?? MODE_NAMES.join(",")).split(",").map((name) => {
  const mode = MODE_NAMES.find((known) => known === name.trim());
  if (!mode) throw new Error(`BENCH_MODES: unknown mode ${name} (known: ${MODE_NAMES.join(", ")})`);
  return mode;
});
const TASK_QUEUE = "bench-tenant-fairness";
const TOOL_TURNS = 1;
const GOAL = 1.5;

/** One run of tenant B: time to first token and duration, in ms from its start request. */
interface BRun {
  ttftMs: number;
  durationMs: number;
}

interface Phase {
  ttft: { p50: number; p95: number };
  duration: { p50: number; p95: number };
  runs: BRun[];
}

interface ModeResult {
  mode: ModeName;
  fairness: boolean;
  /** A's concurrent-run quota (admission mode). */
  aConcurrentRuns?: number;
  alone: Phase;
  contended: Phase;
  /** From A's first start request until its last run ended. */
  aWallMs: number;
  /** The machine's 1-minute load average when A's burst ended (shared machine: other work counts). */
  loadAverage: number;
  ratios: { ttftP95: number; durationP95: number; durationP50: number };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

function phaseOf(runs: BRun[]): Phase {
  const ttft = runs.map((run) => run.ttftMs);
  const duration = runs.map((run) => run.durationMs);
  return {
    ttft: { p50: percentile(ttft, 50), p95: percentile(ttft, 95) },
    duration: { p50: percentile(duration, 50), p95: percentile(duration, 95) },
    runs,
  };
}

/** A scenario of one `ls` turn and the answer, under its own name (so its model calls can be found). */
function scenario(stack: BenchStack, name: string): string {
  stack.llm.addScenario(name, {
    turns: [{ text: "Listing.", toolCalls: [{ name: "ls", arguments: { path: "." } }] }],
    after: { text: "Done: the workspace was listed." },
  });
  return name;
}

/**
 * Admits a start under the tenant's quotas as the API does, waiting out each 429 (its
 * `Retry-After` plus up to 1 s of jitter, as clients that do not retry in lockstep would).
 */
type Admit = (sessionId: string) => Promise<void>;

function admitting(gate: QuotaGate, tenantId: string, quotas: Quotas): Admit {
  return async (sessionId) => {
    for (;;) {
      try {
        await gate.admit(tenantId, sessionId, quotas);
        return;
      } catch (error) {
        if (!(error instanceof QuotaExceededError)) throw error;
        await sleep(error.retryAfterSeconds * 1000 + Math.random() * 1000);
      }
    }
  };
}

/**
 * Starts one run of `tenantId` on `scenarioName` (admitted first when `admit` is given); resolves
 * with its start time (the first start request, admission included) and result.
 */
async function run(
  stack: BenchStack,
  runs: RunClient,
  tenantId: string,
  scenarioName: string,
  admit?: Admit,
): Promise<{ startedAt: number; endedAt: number }> {
  const ref = { tenantId, sessionId: `s-${randomUUID().slice(0, 12)}` };
  const startedAt = Date.now();
  await admit?.(ref.sessionId);
  await runs.deliver(
    ref,
    { text: `[scenario:${scenarioName}] list`, mode: "auto" },
    benchSettings(TOOL_TURNS),
  );
  const result = (await stack.client.workflow.getHandle(runWorkflowId(ref)).result()) as RunResult;
  if (result.status !== "completed") throw new Error(`run ended ${result.status}: ${result.reason}`);
  return { startedAt, endedAt: Date.now() };
}

/** B's runs, one every B_INTERVAL_MS, each on its own scenario; measured from the model server's journal. */
async function tenantB(stack: BenchStack, runs: RunClient, label: string): Promise<BRun[]> {
  const started: Array<Promise<BRun>> = [];
  for (let index = 0; index < B_RUNS; index += 1) {
    const name = scenario(stack, `fair-b-${label}-${index}`);
    started.push(
      run(stack, runs, "tenant-b", name).then(({ startedAt, endedAt }) => {
        // The earliest delta of any attempt (a call retried under load may have sent none).
        const deltas = stack.llm
          .journal()
          .filter((entry) => entry.scenario === name)
          .flatMap((entry) => entry.deltaSentAt?.slice(0, 1) ?? []);
        if (deltas.length === 0) throw new Error(`no streamed delta for ${name}`);
        const firstDelta = Math.min(...deltas);
        return { ttftMs: firstDelta - startedAt, durationMs: endedAt - startedAt };
      }),
    );
    if (index < B_RUNS - 1) await sleep(B_INTERVAL_MS);
  }
  // Settled first: nothing is left running when a failure closes the stack.
  const settled = await Promise.allSettled(started);
  const failed = settled.find((outcome) => outcome.status === "rejected");
  if (failed) throw failed.reason;
  return settled.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
}

async function measure(mode: ModeName): Promise<ModeResult> {
  const fairness = mode !== "off";
  const stack = await startBenchStack({ latencyMs: LATENCY_MS }, { fairness });
  const worker = await startWorkerProcess(stack, TASK_QUEUE, stack.s3.settings, {
    KEEL_MAX_CONCURRENT_ACTIVITIES: String(WORKER_SLOTS),
  });
  const s3 = createS3Client(stack.s3.settings);
  try {
    const runs = runClient(stack, TASK_QUEUE);
    const label = mode;
    const admitA =
      mode === "admission"
        ? admitting(tenantServices(s3, stack.s3.settings, async () => runs).quotas, "tenant-a", {
            concurrentRuns: A_CONCURRENT,
          })
        : undefined;
    // Warm-up: the worker's caches and the server's queues.
    await run(stack, runs, "tenant-b", scenario(stack, `fair-warm-${label}`));
    const alone = phaseOf(await tenantB(stack, runs, `${label}-alone`));
    const aScenario = scenario(stack, `fair-a-${label}`);
    const aStarted = Date.now();
    // Settled, not raced: a failed A run is reported after B's phase, never left running on a
    // closed stack.
    const burst = Promise.allSettled(
      Array.from({ length: A_RUNS }, () => run(stack, runs, "tenant-a", aScenario, admitA)),
    );
    const contended = phaseOf(
      await tenantB(stack, runs, `${label}-burst`).catch(async (error: unknown) => {
        await burst;
        throw error;
      }),
    );
    const settled = await burst;
    const failed = settled.filter((outcome) => outcome.status === "rejected");
    if (failed.length > 0)
      throw new Error(`${failed.length} of A's runs failed: ${String(failed[0]?.reason)}`);
    const aEnded = Math.max(
      ...settled.map((outcome) => (outcome.status === "fulfilled" ? outcome.value.endedAt : 0)),
    );
    const result: ModeResult = {
      mode,
      fairness,
      ...(admitA ? { aConcurrentRuns: A_CONCURRENT } : {}),
      alone,
      contended,
      aWallMs: aEnded - aStarted,
      loadAverage: loadavg()[0] ?? 0,
      ratios: {
        ttftP95: contended.ttft.p95 / alone.ttft.p95,
        durationP95: contended.duration.p95 / alone.duration.p95,
        durationP50: contended.duration.p50 / alone.duration.p50,
      },
    };
    console.log(JSON.stringify({ mode, ratios: result.ratios, aWallMs: result.aWallMs }));
    return result;
  } finally {
    s3.destroy();
    await worker.stop();
    await stack.close();
  }
}

/** A's burst with every slot busy: its model calls × latency ÷ slots. */
const idealBurstMs = (A_RUNS * (TOOL_TURNS + 1) * LATENCY_MS) / WORKER_SLOTS;

function report(results: ModeResult[]): string {
  const machine = machineInfo();
  const seconds = (ms: number) => fixed(ms / 1000, 2);
  const rows = results.flatMap((result) => {
    const mode =
      result.mode === "admission" ? `on + A's concurrentRuns ${result.aConcurrentRuns}` : result.mode;
    return [
      [
        mode,
        "B alone",
        seconds(result.alone.ttft.p50),
        seconds(result.alone.ttft.p95),
        seconds(result.alone.duration.p50),
        seconds(result.alone.duration.p95),
        "",
      ],
      [
        mode,
        `B during A's ${A_RUNS}`,
        seconds(result.contended.ttft.p50),
        seconds(result.contended.ttft.p95),
        seconds(result.contended.duration.p50),
        seconds(result.contended.duration.p95),
        `TTFT p95 ${ratio(result.ratios.ttftP95)}, duration p95 ${ratio(result.ratios.durationP95)} (${result.ratios.durationP95 <= GOAL ? "met" : "not met"}); A's burst took ${seconds(result.aWallMs)} s (ideal ${seconds(idealBurstMs)} s), load average ${fixed(result.loadAverage)}`,
      ],
    ];
  });
  const on = results.find((result) => result.mode === "on");
  const off = results.find((result) => result.mode === "off");
  const admission = results.find((result) => result.mode === "admission");
  const comparison =
    on && off
      ? `Fairness on ÷ off, B during A's burst: TTFT p95 ${ratio(on.contended.ttft.p95 / off.contended.ttft.p95)}, duration p95 ${ratio(on.contended.duration.p95 / off.contended.duration.p95)}, duration p50 ${ratio(on.contended.duration.p50 / off.contended.duration.p50)}. Goal (B's p95 duration within ${GOAL}× of alone) with fairness on: ${on.ratios.durationP95 <= GOAL ? "met" : "not met"}.`
      : "";
  const admissionLine = admission
    ? `With A held to ${admission.aConcurrentRuns} concurrent runs by the API's admission (its clients retrying after \`Retry-After\`), B's p95 duration during A's burst is ${ratio(admission.ratios.durationP95)} of alone (goal ${admission.ratios.durationP95 <= GOAL ? "met" : "not met"}); A's burst took ${fixed(admission.aWallMs / 1000, 2)} s.`
    : "";
  return [
    "# Tenant fairness",
    "",
    machineLine(machine),
    "",
    `Tenant A starts ${A_RUNS} runs at once while tenant B starts one run every ${B_INTERVAL_MS / 1000} s (${B_RUNS} runs); B alone is measured on the same stack just before. Each run: one \`ls\` turn and the answer, each model call answering after ${LATENCY_MS} ms. One Keel worker process with ${WORKER_SLOTS} activity slots. Fairness on: the dev server dispatches by fairness key (\`matching.enableFairness=true\`, as the local stack runs it; every run carries its tenant as its key); off: in arrival order; on + A's concurrentRuns: fairness on, and A's starts admitted by the API's admission code (\`QuotaGate\`, S3 slots) under a concurrent-run quota, its clients retrying after \`Retry-After\` (5 s) plus up to 1 s of jitter (B has no quota). Each mode on its own fresh stack. Time to first token: from B's start request to the model server's first streamed delta of the run's first call. Goal: B's p95 duration during A's burst within ${GOAL}× of B alone.`,
    "",
    table(
      [
        "fairness",
        "phase",
        "TTFT p50 (s)",
        "TTFT p95 (s)",
        "duration p50 (s)",
        "duration p95 (s)",
        "against B alone",
      ],
      rows,
      ["---", "---", "---:", "---:", "---:", "---:", "---"],
    ),
    "",
    comparison,
    "",
    admissionLine,
    "",
    "Run: `npx tsx bench/tenant-fairness.ts` (BENCH_A_RUNS, BENCH_B_RUNS, BENCH_B_INTERVAL_MS, BENCH_LATENCY_MS, BENCH_WORKER_SLOTS, BENCH_A_CONCURRENT, BENCH_MODES=on,off,admission).",
  ].join("\n");
}

runBenchmark(async () => {
  const results: ModeResult[] = [];
  for (const mode of MODES) results.push(await measure(mode));
  const path = writeResults("tenant-fairness", report(results), {
    machine: machineInfo(),
    parameters: { A_RUNS, B_RUNS, B_INTERVAL_MS, LATENCY_MS, WORKER_SLOTS, A_CONCURRENT },
    results,
  });
  console.log(`wrote ${path}`);
});
