/**
 * Evals: what an eval adds to each case, and how many cases a large eval gets through.
 *
 * 1. Overhead per case: N one-turn cases (the model writes a file with one `write` call, then
 *    answers; one command check `test -f …`), run as an eval at concurrency 1 through the API
 *    (POST /v1/evals, waiting for the eval's workflow to end), against the same runs started
 *    directly (POST /v1/sessions/{id}/messages one after the other, each waited for), alternated
 *    in rounds; medians. From the eval's history: the time of each of its activities per case
 *    (start, wait, judge), and Temporal Actions per case from the server's counter.
 * 2. Throughput: an eval of BENCH_THROUGHPUT_CASES cases at each concurrency of BENCH_CONCURRENCY,
 *    the model answering each call after a fixed latency: cases per minute, p50/p95 case time.
 *
 * Run: npx tsx bench/evals.ts  (BENCH_CASES=20, BENCH_ROUNDS=3, BENCH_THROUGHPUT_CASES=200,
 * BENCH_CONCURRENCY=8,32, BENCH_LATENCY_MS=1000, BENCH_STOP_AT=HH:MM UTC to skip what would start
 * after it). Writes bench/results/evals.md and .json.
 */
import { execFileSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { createApp } from "../src/api/app";
import { tenantServices } from "../src/api/tenant-runs";
import type { EvalRunResult } from "../src/contracts/evals";
import { type RunResult, runWorkflowId } from "../src/contracts/runs";
import { EvalStore } from "../src/evals/eval-store";
import { loadCatalog } from "../src/providers/models";
import { RunClient } from "../src/run-client/run-client";
import { JsonObjects } from "../src/store/json-objects";
import { createS3Client } from "../src/store/s3-config";
import { SessionStore } from "../src/store/session-store";
import { WorkspaceSnapshots } from "../src/store/workspace-snapshots";
import { TenantStore } from "../src/tenants/store";
import type { Quotas } from "../src/tenants/types";
import { casesPerMinute, overheadSummary, percentile } from "./support/eval-stats";
import { fetchExecutionChain, mergeBreakdowns, timeBreakdown } from "./support/history";
import { startInProcessWorkers } from "./support/keel-workers";
import { type CpuWindow, measureCpu } from "./support/proc-stats";
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
import { median } from "./support/runs";
import { startBenchStack } from "./support/stack";
import { countsSince, serverActions, totalOf } from "./support/temporal-actions";

const CASES = intFromEnv("BENCH_CASES", 20);
const ROUNDS = intFromEnv("BENCH_ROUNDS", 3);
const THROUGHPUT_CASES = intFromEnv("BENCH_THROUGHPUT_CASES", 200);
const CONCURRENCY = intListFromEnv("BENCH_CONCURRENCY", [8, 32]);
const LATENCY_MS = intFromEnv("BENCH_LATENCY_MS", 1000);
/** Cases of the untimed warm-up round of each side. */
const WARMUP_CASES = 3;
const MODEL = "local-chat";
const TENANT = "bench-evals";
const API_KEY = "bench-evals-key";
/** High enough never to hold a start back: the admission path runs, its limits are never reached. */
const QUOTAS: Quotas = { concurrentRuns: 200, runsPerMinute: 100_000 };
const NOISY_OTHERS_SHARE = 0.2;

const say = (line: string) => process.stdout.write(`evals: ${line}\n`);

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

interface Round {
  evalPerCaseMs: number;
  directPerCaseMs: number;
  /** The direct side's POST …/messages answer time per case (the start, without the run). */
  directPostMs: number;
  evalActionsPerCase: number;
  directActionsPerCase: number;
  evalCpu: CpuWindow;
  directCpu: CpuWindow;
  evalWorkflowId: string;
}

interface ThroughputSample {
  concurrency: number;
  cases: number;
  wallMs: number;
  casesPerMinute: number;
  /** Each case from its run's start to its stored verdict (the trial's `durationMs`). */
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  passed: number;
  actionsPerCase: number;
  cpu: CpuWindow;
  /** The same runs started directly by as many lanes (POST …/messages, waited for), no eval. */
  direct: {
    wallMs: number;
    casesPerMinute: number;
    /** Each run from its POST to its result. */
    p50Ms: number;
    p95Ms: number;
    actionsPerCase: number;
    cpu: CpuWindow;
  };
}

async function main(): Promise<void> {
  const machine = machineInfo();
  const stopAt = stopTime();
  const notes: string[] = [];
  say(
    `${CASES} cases × ${ROUNDS} rounds; throughput ${THROUGHPUT_CASES} cases at concurrency ${CONCURRENCY.join(", ")}, model latency ${LATENCY_MS} ms`,
  );
  const stack = await startBenchStack();
  const s3 = createS3Client(stack.s3.settings);
  const { bucket, prefix } = stack.s3.settings;
  const workers = await startInProcessWorkers(stack, "bench-evals");
  const runs = new RunClient(stack.client, workers.taskQueue);
  const evalStore = new EvalStore(s3, bucket, prefix);
  await new TenantStore(s3, bucket, prefix).putSettings(TENANT, { quotas: QUOTAS });
  const app = createApp({
    config: {
      apiKeys: { [createHash("sha256").update(API_KEY).digest("hex")]: TENANT },
      bodyLimitBytes: 4 * 1024 * 1024,
      allowDirectoryWorkspaces: false,
      sseMaxSeconds: 0,
      defaultModel: MODEL,
    },
    runs: async () => runs,
    store: new SessionStore(s3, stack.s3.settings),
    snapshots: new WorkspaceSnapshots(s3, stack.s3.settings),
    objects: new JsonObjects(s3, bucket, prefix),
    evals: evalStore,
    catalog: loadCatalog(),
    log: () => undefined,
    tenants: tenantServices(s3, stack.s3.settings, async () => runs),
  });
  const call = async (
    method: string,
    path: string,
    json?: unknown,
  ): Promise<{ status: number; body: unknown }> => {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
      ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };

  /** One-turn cases of `scenario`: write out.txt, then answer; checked by `test -f out.txt`. */
  const cases = (scenario: string, count: number) =>
    Array.from({ length: count }, (_, index) => ({
      id: `case-${index}`,
      prompt: `[scenario:${scenario}] case ${index}: write out.txt`,
      checks: [{ type: "command", command: "test -f out.txt" }],
    }));
  const writeScenario = (name: string) =>
    stack.llm.addScenario(name, {
      turns: [{ toolCalls: [{ name: "write", arguments: { path: "out.txt", content: "ok\n" } }] }],
      after: { text: "Done." },
    });

  /** Starts an eval through the API and waits for its workflow to end; checks every case passed. */
  async function runEval(scenario: string, count: number, concurrency: number) {
    const started = performance.now();
    const response = await call("POST", "/v1/evals", {
      suite: { name: scenario, cases: cases(scenario, count) },
      models: [MODEL],
      concurrency,
    });
    if (response.status !== 201)
      throw new Error(`POST /v1/evals: ${response.status} ${JSON.stringify(response.body)}`);
    const { evalId, workflowId } = response.body as { evalId: string; workflowId: string };
    const result = (await stack.client.workflow.getHandle(workflowId).result()) as EvalRunResult;
    const wallMs = performance.now() - started;
    if (result.state !== "completed" || result.passed !== count)
      throw new Error(`eval ${evalId} ended ${result.state}, ${result.passed} of ${count} passed`);
    return { evalId, workflowId, wallMs };
  }

  /** One run started directly (POST …/messages) and waited for: its answer time and its whole time. */
  async function directRun(scenario: string, index: number) {
    const sessionId = `direct-${randomUUID().slice(0, 12)}`;
    const posted = performance.now();
    const response = await call("POST", `/v1/sessions/${sessionId}/messages`, {
      text: `[scenario:${scenario}] case ${index}: write out.txt`,
      model: MODEL,
    });
    const postMs = performance.now() - posted;
    if (response.status !== 202)
      throw new Error(`POST messages: ${response.status} ${JSON.stringify(response.body)}`);
    const result = (await stack.client.workflow
      .getHandle(runWorkflowId({ tenantId: TENANT, sessionId }))
      .result()) as RunResult;
    if (result.status !== "completed") throw new Error(`direct run ended ${result.status}`);
    return { postMs, runMs: performance.now() - posted };
  }

  /** The same runs started directly, one after the other, each waited for. */
  async function runDirect(scenario: string, count: number) {
    const started = performance.now();
    let postMs = 0;
    for (let index = 0; index < count; index++) postMs += (await directRun(scenario, index)).postMs;
    return { wallMs: performance.now() - started, postMs };
  }

  /** The same runs started directly by `concurrency` lanes, each starting its next run once its last ended. */
  async function runDirectLanes(scenario: string, count: number, concurrency: number) {
    const started = performance.now();
    const runMs: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          const index = next;
          next += 1;
          runMs.push((await directRun(scenario, index)).runMs);
        }
      }),
    );
    return { wallMs: performance.now() - started, runMs };
  }

  const pids = [process.pid, ...stack.servers().map((server) => server.pid)];
  const actionsNow = () => serverActions(stack.temporal.metricsUrl, stack.temporal.namespace);
  const measured = async <T>(work: () => Promise<T>) => {
    const before = await actionsNow();
    const { result, cpu } = await measureCpu(pids, work);
    const actions = totalOf(countsSince(before, await actionsNow()));
    return { result, cpu, actions };
  };

  try {
    // 1. Overhead per case (the model answers at once).
    const overheadScenario = "eval-overhead";
    writeScenario(overheadScenario);
    await runEval(overheadScenario, WARMUP_CASES, 1);
    await runDirect(overheadScenario, WARMUP_CASES);
    const rounds: Round[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      if (Date.now() > stopAt) {
        notes.push(`rounds ${round + 1}–${ROUNDS} not run: BENCH_STOP_AT ${process.env.BENCH_STOP_AT} UTC`);
        break;
      }
      // Alternate which side goes first.
      const evalFirst = round % 2 === 0;
      const doEval = () => measured(() => runEval(overheadScenario, CASES, 1));
      const doDirect = () => measured(() => runDirect(overheadScenario, CASES));
      const first = evalFirst ? await doEval() : await doDirect();
      const second = evalFirst ? await doDirect() : await doEval();
      const [evalSide, directSide] = (evalFirst ? [first, second] : [second, first]) as [
        Awaited<ReturnType<typeof doEval>>,
        Awaited<ReturnType<typeof doDirect>>,
      ];
      const entry: Round = {
        evalPerCaseMs: evalSide.result.wallMs / CASES,
        directPerCaseMs: directSide.result.wallMs / CASES,
        directPostMs: directSide.result.postMs / CASES,
        evalActionsPerCase: evalSide.actions / CASES,
        directActionsPerCase: directSide.actions / CASES,
        evalCpu: evalSide.cpu,
        directCpu: directSide.cpu,
        evalWorkflowId: evalSide.result.workflowId,
      };
      rounds.push(entry);
      say(
        `round ${round + 1}: eval ${fixed(entry.evalPerCaseMs)} ms/case, direct ${fixed(entry.directPerCaseMs)} ms/case (${ratio(entry.evalPerCaseMs / entry.directPerCaseMs)}), Actions ${fixed(entry.evalActionsPerCase, 1)} / ${fixed(entry.directActionsPerCase, 1)} per case`,
      );
    }
    if (rounds.length === 0) throw new Error("no round measured before BENCH_STOP_AT");
    const summary = overheadSummary(
      rounds.map((round) => round.evalPerCaseMs),
      rounds.map((round) => round.directPerCaseMs),
    );
    const chains = await Promise.all(
      rounds.map((round) => fetchExecutionChain(stack.client, round.evalWorkflowId)),
    );
    const evalBreakdown = mergeBreakdowns(chains.flat().map(timeBreakdown));
    const measuredCases = CASES * rounds.length;
    const activityRows = evalBreakdown.activities.map((timing) => ({
      activity: timing.activity,
      perCase: timing.count / measuredCases,
      queueMs: timing.meanQueueMs,
      runMs: timing.meanRunMs,
      msPerCase: (timing.count * (timing.meanQueueMs + timing.meanRunMs)) / measuredCases,
    }));
    const judge = activityRows.find((row) => row.activity === "judgeEvalTrial");
    const judgeMsPerCase = judge?.msPerCase ?? 0;
    const directPostMs = median(rounds.map((round) => round.directPostMs));
    const evalActions = median(rounds.map((round) => round.evalActionsPerCase));
    const directActions = median(rounds.map((round) => round.directActionsPerCase));

    // 2. Throughput with a model that answers each call after LATENCY_MS.
    const throughputScenario = "eval-throughput";
    writeScenario(throughputScenario);
    stack.llm.addFaults([
      { kind: "slow", match: { scenario: throughputScenario }, rate: 1, latencyMs: LATENCY_MS },
    ]);
    const samples: ThroughputSample[] = [];
    for (const concurrency of CONCURRENCY) {
      if (Date.now() > stopAt) {
        notes.push(`concurrency ${concurrency} not run: BENCH_STOP_AT ${process.env.BENCH_STOP_AT} UTC`);
        continue;
      }
      // Alternate which side goes first.
      const evalFirst = samples.length % 2 === 0;
      const doEval = () => measured(() => runEval(throughputScenario, THROUGHPUT_CASES, concurrency));
      const doDirect = () =>
        measured(() => runDirectLanes(throughputScenario, THROUGHPUT_CASES, concurrency));
      const firstSide = evalFirst ? await doEval() : await doDirect();
      const secondSide = evalFirst ? await doDirect() : await doEval();
      const [evalSide, directSide] = (evalFirst ? [firstSide, secondSide] : [secondSide, firstSide]) as [
        Awaited<ReturnType<typeof doEval>>,
        Awaited<ReturnType<typeof doDirect>>,
      ];
      const { result, cpu, actions } = evalSide;
      const trials = await evalStore.trials(TENANT, result.evalId);
      const durations = trials.map((trial) => trial.durationMs);
      const sample: ThroughputSample = {
        concurrency,
        cases: THROUGHPUT_CASES,
        wallMs: result.wallMs,
        casesPerMinute: casesPerMinute(THROUGHPUT_CASES, result.wallMs),
        p50Ms: percentile(durations, 50),
        p95Ms: percentile(durations, 95),
        maxMs: Math.max(...durations),
        passed: trials.filter((trial) => trial.passed).length,
        actionsPerCase: actions / THROUGHPUT_CASES,
        cpu,
        direct: {
          wallMs: directSide.result.wallMs,
          casesPerMinute: casesPerMinute(THROUGHPUT_CASES, directSide.result.wallMs),
          p50Ms: percentile(directSide.result.runMs, 50),
          p95Ms: percentile(directSide.result.runMs, 95),
          actionsPerCase: directSide.actions / THROUGHPUT_CASES,
          cpu: directSide.cpu,
        },
      };
      samples.push(sample);
      say(
        `concurrency ${concurrency}: ${fixed(sample.casesPerMinute)} cases/min, p50 ${fixed(sample.p50Ms, 0)} ms, p95 ${fixed(sample.p95Ms, 0)} ms (busy ${fixed(100 * cpu.machineBusyShare, 0)}%); direct ${fixed(sample.direct.casesPerMinute)} runs/min, p50 ${fixed(sample.direct.p50Ms, 0)} ms, p95 ${fixed(sample.direct.p95Ms, 0)} ms`,
      );
    }

    const noisy = (window: CpuWindow) => (window.othersShare > NOISY_OTHERS_SHARE ? "**noisy**" : "");
    const share = (value: number) => `${fixed(100 * value, 0)}%`;
    /** Model calls per case (the tool turn and the answer) × latency: a case's floor. */
    const modelFloorMs = 2 * LATENCY_MS;
    const markdown = `# Eval benchmark

What an eval (\`POST /v1/evals\`, the \`evalRun\` workflow) adds to each case over the run it wraps,
and how many cases an eval of ${THROUGHPUT_CASES} gets through. Every case is a one-turn run: the
model (\`${MODEL}\` on the local LLM server) calls \`write\` once (\`out.txt\`), then answers; its one
check is the command \`test -f out.txt\`, run by the judge in the sandbox on a copy of the workspace
restored from the run's last snapshot. Every case passed in every measurement.

**Shared machine.** ${machineLine(machine)} Other work ran on the same machine: each measurement
records the machine's busy share (/proc/stat) and the part not used by the benchmark's processes
("others", flagged noisy above ${share(NOISY_OTHERS_SHARE)}; kept, not dropped).
Commit measured: \`${commitMeasured()}\`.
Generated by \`npx tsx bench/evals.ts\` (BENCH_CASES=${CASES}, BENCH_ROUNDS=${ROUNDS}, BENCH_THROUGHPUT_CASES=${THROUGHPUT_CASES}, BENCH_CONCURRENCY=${CONCURRENCY.join(",")}, BENCH_LATENCY_MS=${LATENCY_MS}).

**Stage.** The Temporal dev server and S3 server of \`bench/support/stack.ts\`; Keel's workers in the
benchmark's own process (\`startInProcessWorkers\`, one worker set: the shared task queue and its
own, at most 200 activities at once); the API in the same process (Hono's \`app.request\`, the
fetch entry the Node server uses), with the eval store and the tenant services, so every start
(the API's and the eval's) passes admission under the tenant's quotas: \`concurrentRuns\` ${QUOTAS.concurrentRuns},
\`runsPerMinute\` ${QUOTAS.runsPerMinute}, no token or cost quotas — never reached, no start was held.

## 1. Overhead per case

${CASES} cases per measurement. **Eval**: one eval of the ${CASES} cases at concurrency 1, from
\`POST /v1/evals\` to the end of its workflow (every trial started, waited for, judged and stored).
**Direct**: the same ${CASES} runs started by \`POST /v1/sessions/{id}/messages\` one after the other,
each waited for to its result: the runs the eval wraps, without the eval. The model answers at once
(no latency), so the difference is the eval's own work. ${rounds.length} rounds (+1 untimed warm-up of
${WARMUP_CASES} cases each), alternating which side goes first.

${table(
  [
    "round",
    "eval ms/case",
    "direct ms/case",
    "eval − direct",
    "eval ÷ direct",
    "machine busy (eval / direct)",
    "others",
    "",
  ],
  rounds.map((round, index) => [
    index + 1,
    fixed(round.evalPerCaseMs),
    fixed(round.directPerCaseMs),
    fixed(round.evalPerCaseMs - round.directPerCaseMs),
    ratio(round.evalPerCaseMs / round.directPerCaseMs),
    `${share(round.evalCpu.machineBusyShare)} / ${share(round.directCpu.machineBusyShare)}`,
    `${share(round.evalCpu.othersShare)} / ${share(round.directCpu.othersShare)}`,
    noisy(round.evalCpu) || noisy(round.directCpu),
  ]),
  ["---:", "---:", "---:", "---:", "---:", "---:", "---:", "---"],
)}

**Median per case: eval ${fixed(summary.evalMs)} ms, direct ${fixed(summary.directMs)} ms: the eval adds
${fixed(summary.overheadMs)} ms per case (${ratio(summary.ratio)}; median of the rounds' own differences ${fixed(summary.pairedOverheadMs)} ms).**

Where an eval's case goes, from the eval workflows' histories (all rounds; queue = scheduled →
started, run = started → completed; the wait lasts as long as the trial's run):

${table(
  ["activity", "per case", "mean queue ms", "mean run ms", "ms per case"],
  activityRows.map((row) => [
    row.activity,
    fixed(row.perCase, 2),
    fixed(row.queueMs),
    fixed(row.runMs),
    fixed(row.msPerCase),
  ]),
  ["---", "---:", "---:", "---:", "---:"],
)}
| _between activities (the eval's workflow tasks)_ | | | | ${fixed(evalBreakdown.betweenActivitiesMs / measuredCases)} |

\`startEvalTrial\` starts the trial's run through the one start path (admission, usage, the run's
update-with-start); on the direct side the same start is the \`POST …/messages\` answer, which took
${fixed(directPostMs)} ms per case (median of the rounds). \`awaitScheduledRun\` then waits for the rest of the run.

**The judge** (\`judgeEvalTrial\`: read the trial's entries, restore its workspace from the last
snapshot into a scratch folder, run the check in the sandbox, store the result) takes
${fixed(judgeMsPerCase)} ms per case: ${share(judgeMsPerCase / summary.evalMs)} of the eval's time per case,
${share(summary.overheadMs > 0 ? judgeMsPerCase / summary.overheadMs : 0)} of what the eval adds.

**Temporal Actions per case** (the dev server's \`action\` counter over each measurement, median of
the rounds): eval ${fixed(evalActions, 1)}, direct ${fixed(directActions, 1)} — the eval adds
${fixed(evalActions - directActions, 1)} per case (its workflow's tasks and its start, wait and judge activities).

## 2. Throughput of a ${THROUGHPUT_CASES}-case eval

One eval of ${THROUGHPUT_CASES} cases per concurrency, and as its baseline the same ${THROUGHPUT_CASES} runs
started directly by as many lanes (each lane \`POST …/messages\`, waits for the run's result, starts
the next), alternating which goes first. The model answers each call after
${LATENCY_MS} ms, then streams at full speed (the local server's \`slow\` fault on every call of the
scenario); a case makes two calls (the \`write\` turn and the answer), so its floor is
${fixed(modelFloorMs / 1000, 1)} s of model time and the ideal at concurrency c is c × ${fixed(60_000 / modelFloorMs, 0)} cases per minute.
Case time: a trial's \`durationMs\` as the eval stores it, from its run's start (once
\`startEvalTrial\` has started it) to its judged result; a direct run's time is from its \`POST\` to its result.
Actions per case from the server's counter, which also counts activity heartbeats (the eval's
wait activity heartbeats while its run goes on, so a longer case costs more of them).

${table(
  [
    "concurrency",
    "wall s",
    "cases/min",
    "ideal cases/min",
    "of ideal",
    "case p50 ms",
    "case p95 ms",
    "case max ms",
    "passed",
    "Actions/case",
    "machine busy",
    "others",
    "",
  ],
  samples.map((sample) => {
    const ideal = (sample.concurrency * 60_000) / modelFloorMs;
    return [
      sample.concurrency,
      fixed(sample.wallMs / 1000),
      fixed(sample.casesPerMinute),
      fixed(ideal, 0),
      share(sample.casesPerMinute / ideal),
      fixed(sample.p50Ms, 0),
      fixed(sample.p95Ms, 0),
      fixed(sample.maxMs, 0),
      `${sample.passed}/${sample.cases}`,
      fixed(sample.actionsPerCase, 1),
      share(sample.cpu.machineBusyShare),
      share(sample.cpu.othersShare),
      noisy(sample.cpu),
    ];
  }),
  ["---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---"],
)}

Direct runs, same concurrency:

${table(
  [
    "concurrency",
    "wall s",
    "runs/min",
    "run p50 ms",
    "run p95 ms",
    "Actions/run",
    "machine busy",
    "others",
    "",
    "eval ÷ direct throughput",
  ],
  samples.map((sample) => [
    sample.concurrency,
    fixed(sample.direct.wallMs / 1000),
    fixed(sample.direct.casesPerMinute),
    fixed(sample.direct.p50Ms, 0),
    fixed(sample.direct.p95Ms, 0),
    fixed(sample.direct.actionsPerCase, 1),
    share(sample.direct.cpu.machineBusyShare),
    share(sample.direct.cpu.othersShare),
    noisy(sample.direct.cpu),
    ratio(sample.casesPerMinute / sample.direct.casesPerMinute),
  ]),
  ["---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---", "---:"],
)}
${notes.length > 0 ? `\nNot measured: ${notes.join("; ")}.\n` : ""}`;
    const path = writeResults("evals", markdown, {
      machine,
      commit: commitMeasured(),
      parameters: {
        cases: CASES,
        rounds: ROUNDS,
        warmupCases: WARMUP_CASES,
        throughputCases: THROUGHPUT_CASES,
        concurrency: CONCURRENCY,
        latencyMs: LATENCY_MS,
        quotas: QUOTAS,
        workers: "in-process (startInProcessWorkers)",
      },
      overhead: { ...summary, rounds, directPostMs, judgeMsPerCase, activities: activityRows, evalBreakdown },
      actionsPerCase: { eval: evalActions, direct: directActions },
      throughput: samples,
      notes,
    });
    console.log(markdown);
    say(`wrote ${path}`);
  } finally {
    await workers.stop();
    s3.destroy();
    await stack.close();
  }
}

runBenchmark(main);
