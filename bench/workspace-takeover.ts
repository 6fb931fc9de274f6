/**
 * Workspace takeover: the time from SIGKILL of the worker that holds a run's workspace (while it
 * runs a bash command there) to the run moving on with a second worker (the call's result stored
 * by that worker), with the default run settings. Two worker processes per repetition, each with
 * its own workspace root, so the second worker must restore the workspace from S3.
 *
 * Baseline in the same run: the run workflow of BENCH_BASELINE_REF (default: the last commit
 * before the takeover timeouts were capped), bundled from a copy of that commit's src/ — same
 * activities, same servers, only the workflow code (and so its timeouts) differs.
 *
 * Run: npx tsx bench/workspace-takeover.ts   (BENCH_REPS=2 per variant)
 * Writes bench/results/workspace-takeover.md and .json.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_RUN_SETTINGS, runWorkflowId } from "../src/contracts/runs";
import { RunClient } from "../src/run-client/run-client";
import { createS3Client, s3SettingsToEnv } from "../src/store/s3-config";
import { SessionStore } from "../src/store/session-store";
import { workspaceFor } from "../src/tools/workspace";
import { fetchEvents } from "./support/history";
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
import { type BenchStack, bundleWorkflows, projectRoot, startBenchStack } from "./support/stack";
import { spawnWorkerProcess, type WorkerProcess } from "./support/worker-process";

const REPS = intFromEnv("BENCH_REPS", 2);
/** The last commit whose run workflow waited the full 30 s heartbeat and schedule-to-start timeouts. */
const BEFORE_TIMEOUT_CAPS = "013e531";
const TARGET_MS = 15_000;
const TENANT = "bench";
const SCENARIO = "takeover";

interface Worker extends WorkerProcess {
  root: string;
}

/** A worker process (`src/worker/main.ts`) with its own workspace root, running `bundle`. */
async function startWorker(stack: BenchStack, taskQueue: string, bundle: string): Promise<Worker> {
  const root = mkdtempSync(join(stack.dir, "workspaces-"));
  const worker = await spawnWorkerProcess("src/worker/main.ts", {
    KEEL_TEMPORAL_ADDRESS: stack.temporal.address,
    KEEL_TEMPORAL_NAMESPACE: stack.temporal.namespace,
    KEEL_TASK_QUEUE: taskQueue,
    KEEL_WORKFLOW_BUNDLE: bundle,
    KEEL_WORKSPACE_ROOT: root,
    ...s3SettingsToEnv(stack.s3.settings),
    OPENAI_API_KEY: "local-key",
    OPENAI_BASE_URL: stack.llm.openaiBaseURL,
  });
  return { ...worker, root };
}

/** The baseline's workflow bundle: `src/workflows` of `ref`, from a copy of that commit's src/. */
async function baselineBundle(stack: BenchStack, ref: string): Promise<string> {
  const copy = mkdtempSync(join(stack.dir, "baseline-"));
  const archive = execFileSync("git", ["archive", ref, "src"], {
    cwd: projectRoot,
    maxBuffer: 256 * 1024 ** 2,
  });
  execFileSync("tar", ["x", "-C", copy], { input: archive });
  symlinkSync(join(projectRoot, "node_modules"), join(copy, "node_modules"));
  return bundleWorkflows(join(copy, "src/workflows/index.ts"), stack.dir, "baseline-workflows");
}

interface Takeover {
  /** SIGKILL → the bash call's result stored (by the second worker). */
  totalMs: number;
  /** SIGKILL → the retry's schedule-to-start timeout (the workspace moves). */
  scheduleToStartTimeoutMs: number;
  /** SIGKILL → the second worker's claim (with the restore) completed. */
  claimedMs: number;
}

async function poll<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  what: string,
  timeoutMs = 180_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function takeover(stack: BenchStack, bundle: string, label: string, rep: number): Promise<Takeover> {
  const taskQueue = `takeover-${label}-${rep}-${Date.now()}`;
  const runs = new RunClient(stack.client, taskQueue);
  const store = new SessionStore(createS3Client(stack.s3.settings), stack.s3.settings);
  const holder = await startWorker(stack, taskQueue, bundle);
  const ref = { tenantId: TENANT, sessionId: `${taskQueue.replaceAll("/", "-")}` };
  await runs.deliver(
    ref,
    { text: `[scenario:${SCENARIO}] go`, mode: "auto" },
    {
      ...DEFAULT_RUN_SETTINGS,
      model: "local-chat",
    },
  );
  const dir = workspaceFor(holder.root, ref.tenantId, ref.sessionId).dir;
  // The second worker polls before the kill; only then does the command start (turn 1).
  const second = await startWorker(stack, taskQueue, bundle);
  await poll(() => (existsSync(join(dir, "started")) ? true : undefined), "the command to start");
  const killedAt = Date.now();
  await holder.kill();
  await poll(async () => {
    const { entries } = await store.readEntries(ref);
    const stored = entries.some(
      ({ entry }) =>
        entry.type === "message" && entry.message.role === "toolResult" && entry.message.toolName === "bash",
    );
    return stored ? true : undefined;
  }, "the call's result");
  const storedAt = Date.now();
  await stack.client.workflow.getHandle(runWorkflowId(ref)).result();
  const events = await fetchEvents(stack.client, runWorkflowId(ref));
  const timeOf = (event: (typeof events)[number]) =>
    Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
  const timedOut = events.filter((event) => event.activityTaskTimedOutEventAttributes);
  const scheduleToStart = timedOut.find(
    (event) => event.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType === 2,
  );
  const activityNames = new Map(
    events.flatMap((event) =>
      event.activityTaskScheduledEventAttributes
        ? [[String(event.eventId), event.activityTaskScheduledEventAttributes.activityType?.name ?? ""]]
        : [],
    ),
  );
  const claims = events.filter((event) => {
    const completed = event.activityTaskCompletedEventAttributes;
    return (
      completed &&
      activityNames.get(String(completed.scheduledEventId)) === "claimWorkspace" &&
      timeOf(event) > killedAt
    );
  });
  await second.stop();
  return {
    totalMs: storedAt - killedAt,
    scheduleToStartTimeoutMs: scheduleToStart ? timeOf(scheduleToStart) - killedAt : Number.NaN,
    claimedMs: claims[0] ? timeOf(claims[0]) - killedAt : Number.NaN,
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
};

async function main(): Promise<void> {
  const machine = machineInfo();
  const baselineRef = process.env.BENCH_BASELINE_REF ?? BEFORE_TIMEOUT_CAPS;
  console.log(`workspace-takeover: ${REPS} repetitions per variant, baseline ${baselineRef.slice(0, 7)}`);
  const stack = await startBenchStack();
  try {
    // Turn 0 writes a file (snapshotted), turn 1 runs a long command: the kill lands during it.
    stack.llm.addScenario(SCENARIO, {
      turns: [
        { toolCalls: [{ name: "write", arguments: { path: "a.txt", content: "state to restore\n" } }] },
        { toolCalls: [{ name: "bash", arguments: { command: "touch started; sleep 120" } }] },
      ],
      after: { text: "moved on" },
    });
    const variants = [
      { label: "baseline", bundle: await baselineBundle(stack, baselineRef) },
      { label: "current", bundle: stack.keelBundlePath },
    ];
    const results: Record<string, Takeover[]> = {};
    for (const variant of variants) {
      results[variant.label] = [];
      for (let rep = 0; rep < REPS; rep++) {
        const result = await takeover(stack, variant.bundle, variant.label, rep);
        console.log(`${variant.label} #${rep + 1}: ${fixed(result.totalMs / 1000, 2)} s`, result);
        results[variant.label]?.push(result);
      }
    }
    const summary = variants.map(({ label }) => {
      const list = results[label] ?? [];
      const pick = (key: keyof Takeover) => median(list.map((result) => result[key]));
      return {
        label,
        totalMs: pick("totalMs"),
        maxMs: Math.max(...list.map((result) => result.totalMs)),
        scheduleToStartTimeoutMs: pick("scheduleToStartTimeoutMs"),
        claimedMs: pick("claimedMs"),
      };
    });
    const [baseline, current] = summary;
    if (!baseline || !current) throw new Error("missing variant");
    const seconds = (ms: number) => fixed(ms / 1000, 1);
    const markdown = [
      "# Workspace takeover",
      "",
      machineLine(machine),
      "",
      `Time from SIGKILL of the worker holding a run's workspace (during a bash call there) to the call's result stored by a second worker that had to restore the workspace from S3; default run settings, ${REPS} repetitions per variant (median, max). Baseline: the run workflow of ${baselineRef.slice(0, 7)} (timeouts 30 s / 30 s) in the same run.`,
      "",
      table(
        [
          "variant",
          "total (median)",
          "total (max)",
          "workspace moves (schedule-to-start timeout) at",
          "claimed and restored elsewhere at",
        ],
        summary.map((row) => [
          row.label,
          `${seconds(row.totalMs)} s`,
          `${seconds(row.maxMs)} s`,
          `${seconds(row.scheduleToStartTimeoutMs)} s`,
          `${seconds(row.claimedMs)} s`,
        ]),
        ["---", "---:", "---:", "---:", "---:"],
      ),
      "",
      `Current / baseline: ${ratio(current.totalMs / baseline.totalMs)}. Target ≤ ${seconds(TARGET_MS)} s: ${current.maxMs <= TARGET_MS ? "met" : "NOT met"} (max ${seconds(current.maxMs)} s).`,
      "",
      "The killed call's heartbeat timeout is not an event of its own (the server retries the call on the dead worker's queue): it is the part before the schedule-to-start timeout, less that timeout and the 1 s retry interval.",
      "",
      "Reproduce: `npx tsx bench/workspace-takeover.ts` (BENCH_REPS, BENCH_BASELINE_REF).",
    ].join("\n");
    console.log(`\n${markdown}\n`);
    writeResults("workspace-takeover", markdown, { machine, baselineRef, reps: REPS, results, summary });
  } finally {
    await stack.close();
  }
}

runBenchmark(main);
