/**
 * The local cluster under load (bench/cluster/): a ramp of concurrent sessions through the API
 * address, each session one message whose model (the local LLM server: first token after about
 * 1 s, then streaming) takes three turns with 1, 2 and 0 `ls` calls. Per step: turns/s, Keel's
 * added time per turn (end-to-end minus the model's own time) p50/p95, errors, Temporal Actions,
 * S3 requests by kind and history bytes per turn, CPU seconds per turn per process kind, and the
 * cost of 1,000 turns. The ramp stops at the knee (turns/s grows less than
 * BENCH_KNEE_GROWTH while concurrency grows), on errors, or at BENCH_STOP_AT (UTC HH:MM), and says
 * which. Results are written after every step, so a cut run keeps what it measured.
 *
 * Run: npm run bench:cluster   (BENCH_CONCURRENCY=10,50,100,200 BENCH_STEP_SECONDS=60
 *      BENCH_KNEE_GROWTH=0.15 BENCH_LENGTHS=1,10,100,1000 (or none) BENCH_FAULTS=1 (0: no fault run)
 *      BENCH_FAULT_SESSIONS=10 BENCH_STOP_AT=HH:MM BENCH_RESULT_NAME=cluster)
 * Starts its own cluster (a running `npm run cluster` must be stopped first), stops it at the end.
 * Writes bench/results/cluster.md and .json.
 */
import { execFileSync } from "node:child_process";
import { Client, Connection } from "@temporalio/client";
import { clientInterceptors } from "../src/run-client/client-interceptors";
import { paceScenario, registerScenario } from "./cluster/api-runs";
import { type Cluster, startCluster } from "./cluster/cluster";
import { type FaultRunResult, runFaults } from "./cluster/fault-run";
import {
  LLM_LATENCY_MS,
  LLM_TOKENS_PER_SECOND,
  TEMPORAL_ADDRESS,
  TEMPORAL_NAMESPACE,
} from "./cluster/layout";
import { clusterReport } from "./cluster/load-report";
import {
  lengthWorkload,
  RAMP_TOOL_CALLS,
  RAMP_WORKLOAD,
  runStep,
  type StepResult,
  scenarioOf,
} from "./cluster/load-step";
import { clusterS3Settings } from "./cluster/seaweedfs";
import { startCountingProxy } from "./support/counting-proxy";
import { intFromEnv, intListFromEnv, machineInfo, runBenchmark, writeResults } from "./support/report";

const say = (line: string) => process.stdout.write(`cluster-load: ${line}\n`);

/** `HH:MM` (UTC, today) → epoch ms; no value: never. */
function stopTime(): number {
  const raw = process.env.BENCH_STOP_AT;
  if (!raw) return Number.POSITIVE_INFINITY;
  const [hours, minutes] = raw.split(":").map(Number);
  const at = new Date();
  at.setUTCHours(hours ?? 0, minutes ?? 0, 0, 0);
  return at.getTime();
}

function commitMeasured(): string {
  return execFileSync("git", ["log", "-1", "--format=%h %s"], { encoding: "utf8" }).trim();
}

/** Concurrent sessions of the length series, and about how many turns each lane runs per length. */
const LENGTH_LANES = 4;
const LENGTH_TURNS_PER_LANE = 20;
/** Sessions longer than this run after the fault run (a 1,000-turn session takes minutes). */
const LONG_SESSION_TURNS = 100;

async function main(): Promise<void> {
  const ramp = intListFromEnv("BENCH_CONCURRENCY", [10, 50, 100, 200]);
  const lengths =
    process.env.BENCH_LENGTHS === "none" ? [] : intListFromEnv("BENCH_LENGTHS", [1, 10, 100, 1000]);
  const faultSessions = intFromEnv("BENCH_FAULT_SESSIONS", 10);
  const stepMs = intFromEnv("BENCH_STEP_SECONDS", 60) * 1000;
  const kneeGrowth = Number(process.env.BENCH_KNEE_GROWTH ?? "0.15");
  const stopAt = stopTime();
  const machine = machineInfo();
  const commit = commitMeasured();
  const s3 = await startCountingProxy(clusterS3Settings.endpoint as string);
  let cluster: Cluster | undefined;
  let connection: Connection | undefined;
  const steps: StepResult[] = [];
  const lengthSteps: StepResult[] = [];
  let stopReason = "the ramp's last step ran";
  let lengthNote = "not run";
  let faultRun: FaultRunResult | undefined;
  let faultNote = process.env.BENCH_FAULTS === "0" ? "not run (BENCH_FAULTS=0)" : "not run";
  const write = () => {
    const parameters = {
      ramp,
      stepMs,
      kneeGrowth,
      lengths,
      faultSessions,
      llmLatencyMs: LLM_LATENCY_MS,
      llmTokensPerSecond: LLM_TOKENS_PER_SECOND,
      commit,
    };
    const withoutSessions = (list: StepResult[]) => list.map(({ sessions: _sessions, ...step }) => step);
    const path = writeResults(
      process.env.BENCH_RESULT_NAME ?? "cluster",
      clusterReport({ machine, parameters, steps, stopReason, lengthSteps, lengthNote, faultRun, faultNote }),
      {
        machine,
        parameters,
        stopReason,
        steps: withoutSessions(steps),
        lengthNote,
        lengthSteps: withoutSessions(lengthSteps),
        faultNote,
        faultRun,
      },
    );
    say(`wrote ${path}`);
  };
  // Stopped from outside (the time budget): keep what was measured and stop the cluster.
  process.once("SIGTERM", () => {
    stopReason = `${stopReason}; the benchmark was stopped (SIGTERM) before it finished`;
    write();
    void (async () => {
      await cluster?.stop();
      process.exit(1);
    })();
  });
  try {
    // The ramp's scenario is paced (below); the length series' scenarios answer at once.
    cluster = await startCluster(say, { s3Endpoint: s3.endpoint, llmUnpaced: true });
    connection = await Connection.connect({ address: TEMPORAL_ADDRESS, interceptors: clientInterceptors() });
    const client = new Client({ connection, namespace: TEMPORAL_NAMESPACE });
    await registerScenario(RAMP_WORKLOAD.scenario, scenarioOf(RAMP_TOOL_CALLS));
    await paceScenario(RAMP_WORKLOAD.scenario, LLM_LATENCY_MS, LLM_TOKENS_PER_SECOND);
    for (const concurrency of ramp) {
      if (Date.now() >= stopAt) {
        stopReason = `stopped at ${process.env.BENCH_STOP_AT} UTC before the step of ${concurrency} (time budget)`;
        break;
      }
      say(`step: ${concurrency} concurrent sessions for ${stepMs / 1000} s`);
      const step = await runStep({
        client,
        parts: cluster.parts,
        s3,
        workload: RAMP_WORKLOAD,
        concurrency,
        durationMs: stepMs,
        stopAt,
      });
      steps.push(step);
      say(
        `  ${step.turnsPerSecond.toFixed(2)} turns/s, added p50 ${step.addedMsPerTurn.p50.toFixed(0)} ms p95 ${step.addedMsPerTurn.p95.toFixed(0)} ms, errors ${step.errors}/${step.sessions.length}, busy ${(step.machineBusyShare * 100).toFixed(0)} %`,
      );
      write();
      const previous = steps.at(-2);
      if (step.cutShort) {
        stopReason = `cut short at ${process.env.BENCH_STOP_AT} UTC during the step of ${concurrency} (time budget)`;
        break;
      }
      if (step.errors > 0.05 * step.sessions.length) {
        stopReason = `errors in more than 5 % of the sessions at ${concurrency}`;
        break;
      }
      if (previous && step.turnsPerSecond < previous.turnsPerSecond * (1 + kneeGrowth)) {
        stopReason = `knee: turns/s grew ${((step.turnsPerSecond / previous.turnsPerSecond - 1) * 100).toFixed(0)} % from ${previous.concurrency} to ${concurrency} sessions (threshold ${(kneeGrowth * 100).toFixed(0)} %)`;
        break;
      }
    }
    const runLengths = async (series: number[]) => {
      for (const turns of series) {
        if (Date.now() >= stopAt) {
          lengthNote = `stopped at ${process.env.BENCH_STOP_AT} UTC before sessions of ${turns} turns (time budget)`;
          return;
        }
        const { workload, toolCalls } = lengthWorkload(turns);
        await registerScenario(workload.scenario, scenarioOf(toolCalls));
        say(`length series: ${LENGTH_LANES} sessions at once of ${turns} turns`);
        const step = await runStep({
          client,
          parts: cluster!.parts,
          s3,
          workload,
          concurrency: LENGTH_LANES,
          durationMs: 0,
          sessionsPerLane: Math.max(1, Math.ceil(LENGTH_TURNS_PER_LANE / turns)),
          stopAt,
        });
        lengthSteps.push(step);
        lengthNote = "ran";
        say(`  ${step.turnsPerSecond.toFixed(2)} turns/s, errors ${step.errors}/${step.sessions.length}`);
        write();
      }
    };
    // Short sessions first; the long ones (minutes each) after the fault run, as far as time allows.
    await runLengths(lengths.filter((turns) => turns <= LONG_SESSION_TURNS));
    // About three minutes: five faults 15 s apart, each part down 8 s, and the sessions' tails.
    const faultRunMs = 180_000;
    if (process.env.BENCH_FAULTS !== "0") {
      if (Date.now() + faultRunMs >= stopAt) {
        faultNote = `not run: it takes about ${faultRunMs / 60_000} minutes and BENCH_STOP_AT ${process.env.BENCH_STOP_AT} UTC came first (time budget)`;
      } else {
        say(`fault run: ${faultSessions} sessions at once`);
        faultRun = await runFaults({ client, parts: cluster.parts, concurrency: faultSessions, say });
        faultNote = "ran";
        say(
          `  ${faultRun.completed}/${faultRun.sessions} sessions completed, ${faultRun.violations.length} violations`,
        );
      }
    }
    await runLengths(lengths.filter((turns) => turns > LONG_SESSION_TURNS));
  } finally {
    write();
    await connection?.close();
    await cluster?.stop();
    await s3.close();
  }
}

runBenchmark(main);
