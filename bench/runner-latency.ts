/**
 * Runner latency: the same tool-heavy run (one `ls` call per turn) with its tools in the worker
 * and on a `keel runner` (same machine, same servers, interleaved), measured per call as the
 * tool activity's time from scheduled to completed in the run's history. The goal (issue 27):
 * at most 30 ms added at the median. Also: the runner process's CPU and memory at idle and under
 * that load (/proc), and the takeover time after a runner is killed during a call (kill → the
 * call's activity completed on another runner; goal ≤ 15 s), with the default heartbeat timeout.
 *
 * Run: npx tsx bench/runner-latency.ts   (BENCH_CALLS=20 calls per run, BENCH_REPS=2 runs per variant)
 * Writes bench/results/runner-latency.md and .json.
 */

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { createApp } from "../src/api/app";
import { startApiServer } from "../src/api/server";
import { DEFAULT_RUN_SETTINGS, runWorkflowId } from "../src/contracts/runs";
import { EnvironmentStore } from "../src/environments/store";
import { loadCatalog } from "../src/providers/models";
import { RunClient } from "../src/run-client/run-client";
import { JsonObjects } from "../src/store/json-objects";
import { createS3Client, s3SettingsToEnv } from "../src/store/s3-config";
import { SessionStore } from "../src/store/session-store";
import { ToolCallMarkers } from "../src/store/tool-call-markers";
import { WorkspaceSnapshots } from "../src/store/workspace-snapshots";
import { fetchEvents } from "./support/history";
import {
  fixed,
  intFromEnv,
  machineInfo,
  machineLine,
  runBenchmark,
  table,
  writeResults,
} from "./support/report";
import { projectRoot, startBenchStack } from "./support/stack";
import { spawnWorkerProcess } from "./support/worker-process";

const CALLS = intFromEnv("BENCH_CALLS", 20);
const REPS = intFromEnv("BENCH_REPS", 2);
const TARGET_ADDED_MS = 30;
const TENANT = "bench";

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};

/** CPU seconds used so far and resident memory (MiB) of a process, from /proc. */
function usageOf(pid: number): { cpuSeconds: number; rssMiB: number } {
  // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return { cpuSeconds: ticks / CLOCK_TICKS, rssMiB: Number(rss ?? 0) / 1024 };
}
/**
 * The S3 server's round trip on this machine, now: the median of `n` small PUTs and GETs. A
 * runner call adds S3 round trips as well as HTTP hops, so the added latency is read against it.
 */
async function s3RoundTrips(s3: S3Client, bucket: string, prefix: string, n = 40) {
  const put: number[] = [];
  const get: number[] = [];
  for (let index = 0; index < n; index++) {
    const Key = `${prefix}bench-round-trip/${index % 4}.json`;
    let started = performance.now();
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: `{"index":${index}}` }));
    put.push(performance.now() - started);
    started = performance.now();
    const answer = await s3.send(new GetObjectCommand({ Bucket: bucket, Key }));
    await answer.Body?.transformToString();
    get.push(performance.now() - started);
  }
  return { putMs: percentile(put, 50), getMs: percentile(get, 50) };
}

const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
const IDLE_SECONDS = 10;

runBenchmark(async () => {
  const stack = await startBenchStack();
  const s3 = createS3Client(stack.s3.settings);
  const taskQueue = "runner-latency";
  const worker = await spawnWorkerProcess("src/worker/main.ts", {
    KEEL_TEMPORAL_ADDRESS: stack.temporal.address,
    KEEL_TEMPORAL_NAMESPACE: stack.temporal.namespace,
    KEEL_TASK_QUEUE: taskQueue,
    KEEL_WORKFLOW_BUNDLE: stack.keelBundlePath,
    KEEL_WORKSPACE_ROOT: mkdtempSync(join(stack.dir, "workspaces-")),
    ...s3SettingsToEnv(stack.s3.settings),
    OPENAI_API_KEY: "local-key",
    OPENAI_BASE_URL: stack.llm.openaiBaseURL,
  });
  const runs = new RunClient(stack.client, taskQueue);
  const store = new SessionStore(s3, stack.s3.settings);
  const environments = new EnvironmentStore(s3, stack.s3.settings.bucket, stack.s3.settings.prefix);
  const apiKey = "bench-key";
  const app = createApp({
    config: {
      apiKeys: { [createHash("sha256").update(apiKey).digest("hex")]: TENANT },
      bodyLimitBytes: 1024 * 1024,
      allowDirectoryWorkspaces: false,
      sseMaxSeconds: 0,
      defaultModel: "local-chat",
    },
    runs: async () => runs,
    store,
    snapshots: new WorkspaceSnapshots(s3, stack.s3.settings),
    objects: new JsonObjects(s3, stack.s3.settings.bucket, stack.s3.settings.prefix),
    catalog: loadCatalog(),
    log: () => undefined,
    environments: { store: environments, markers: new ToolCallMarkers(s3, stack.s3.settings) },
  });
  const { server, port } = await startApiServer(app, 0);
  const s3Baseline = await s3RoundTrips(s3, stack.s3.settings.bucket, stack.s3.settings.prefix);
  await environments.create(TENANT, { name: "bench", kind: "runner", createdAt: new Date().toISOString() });
  const { token } = await environments.issueToken(TENANT, "bench");
  const startRunner = (): ChildProcess =>
    spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(projectRoot, "src/cli/main.ts"),
        "runner",
        "--env",
        "bench",
        "--workspace-root",
        mkdtempSync(join(stack.dir, "runner-")),
      ],
      {
        cwd: projectRoot,
        stdio: "ignore",
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          KEEL_API_URL: `http://127.0.0.1:${port}`,
          KEEL_RUNNER_TOKEN: token,
        },
      },
    );
  const runner = startRunner();
  const runnerPid = runner.pid ?? 0;
  stack.llm.addScenario("calls", {
    turns: Array.from({ length: CALLS }, () => ({ toolCalls: [{ name: "ls", arguments: {} }] })),
    after: { text: "done" },
  });

  let spare: ChildProcess | undefined;
  /**
   * A bash call held by the first runner; a second runner started; the first killed. Returns the
   * time from the kill to the call's activity completed (the retry, on the second runner: an
   * unsafe call that was started gets its unknown-outcome result there, without running again).
   */
  const measureTakeover = async (): Promise<number> => {
    const tag = `${Date.now() % 1_000_000}`;
    stack.llm.addScenario("takeover", {
      turns: [{ toolCalls: [{ name: "bash", arguments: { command: `sleep 60.${tag}` } }] }],
      after: { text: "done" },
    });
    const ref = { tenantId: TENANT, sessionId: "latency-takeover" };
    const settings = { ...DEFAULT_RUN_SETTINGS, model: "local-chat", environment: "bench" };
    await runs.deliver(ref, { text: "[scenario:takeover] go", mode: "auto" }, settings);
    for (;;) {
      const sleeping = (() => {
        try {
          return execFileSync("pgrep", ["-f", `sleep 60.${tag}`], { encoding: "utf8" }).trim() !== "";
        } catch {
          return false;
        }
      })();
      if (sleeping) break;
      await sleep(50);
    }
    spare = startRunner();
    await sleep(2_000);
    const killedAt = Date.now();
    runner.kill("SIGKILL");
    await stack.client.workflow.getHandle(runWorkflowId(ref)).result();
    const events = await fetchEvents(stack.client, runWorkflowId(ref));
    const toolCall = events.find(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === "executeToolOnRunner",
    );
    const completed = events.find(
      (event) =>
        toolCall &&
        String(event.activityTaskCompletedEventAttributes?.scheduledEventId) === String(toolCall.eventId),
    );
    const at = completed?.eventTime;
    return at ? Number(at.seconds ?? 0) * 1000 + Math.floor((at.nanos ?? 0) / 1e6) - killedAt : Number.NaN;
  };
  const samples: Record<"worker" | "runner", number[]> = { worker: [], runner: [] };
  const load = { cpuSeconds: 0, wallSeconds: 0, maxRssMiB: 0 };
  let idle = { cpuPercent: Number.NaN, rssMiB: Number.NaN };
  let takeoverMs = Number.NaN;
  try {
    // Idle: started, one claim long poll open, no call.
    await sleep(3_000);
    const idleFrom = usageOf(runnerPid);
    await sleep(IDLE_SECONDS * 1000);
    const idleTo = usageOf(runnerPid);
    idle = {
      cpuPercent: ((idleTo.cpuSeconds - idleFrom.cpuSeconds) / IDLE_SECONDS) * 100,
      rssMiB: idleTo.rssMiB,
    };
    for (let rep = 0; rep < REPS; rep++) {
      for (const variant of ["worker", "runner"] as const) {
        const ref = { tenantId: TENANT, sessionId: `latency-${variant}-${rep}` };
        const settings = {
          ...DEFAULT_RUN_SETTINGS,
          model: "local-chat",
          limits: { ...DEFAULT_RUN_SETTINGS.limits, maxTurns: CALLS + 5 },
          ...(variant === "runner" ? { environment: "bench" } : {}),
        };
        const before = usageOf(runnerPid);
        const startedAt = Date.now();
        const rss = setInterval(() => {
          load.maxRssMiB = Math.max(load.maxRssMiB, usageOf(runnerPid).rssMiB);
        }, 200);
        await runs.deliver(ref, { text: "[scenario:calls] go", mode: "auto" }, settings);
        await stack.client.workflow.getHandle(runWorkflowId(ref)).result();
        clearInterval(rss);
        if (variant === "runner") {
          load.cpuSeconds += usageOf(runnerPid).cpuSeconds - before.cpuSeconds;
          load.wallSeconds += (Date.now() - startedAt) / 1000;
        }
        const events = await fetchEvents(stack.client, runWorkflowId(ref));
        const scheduled = new Map<string, number>();
        for (const event of events) {
          const at =
            Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
          const type = event.activityTaskScheduledEventAttributes?.activityType?.name;
          if (type === "executeTool" || type === "executeToolOnRunner")
            scheduled.set(String(event.eventId), at);
          const completed = event.activityTaskCompletedEventAttributes;
          const from = completed ? scheduled.get(String(completed.scheduledEventId)) : undefined;
          if (from !== undefined) samples[variant].push(at - from);
        }
      }
    }
    takeoverMs = await measureTakeover();
  } finally {
    runner.kill("SIGTERM");
    spare?.kill("SIGTERM");
    await new Promise((done) => server.close(done));
    await worker.stop();
    s3.destroy();
    await stack.close();
  }
  const machine = machineInfo();
  const row = (variant: "worker" | "runner") => [
    variant,
    samples[variant].length,
    fixed(percentile(samples[variant], 50)),
    fixed(percentile(samples[variant], 90)),
  ];
  const added = percentile(samples.runner, 50) - percentile(samples.worker, 50);
  const markdown = `# Runner latency\n\n${machineLine(machine)}\n\nPer tool call (\`ls\`), scheduled → completed in the run's history; ${CALLS} calls per run, ${REPS} run(s) per variant, interleaved.\n\n${table(["tools in", "calls", "p50 ms", "p90 ms"], [row("worker"), row("runner")])}\n\nAdded at the median: **${fixed(added)} ms** (goal ≤ ${TARGET_ADDED_MS} ms: ${added <= TARGET_ADDED_MS ? "met" : "not met"}). The S3 server's round trip in the same run, median of 40 small requests each: PUT ${fixed(s3Baseline.putMs, 1)} ms, GET ${fixed(s3Baseline.getMs, 1)} ms; the added latency is ${fixed(added / Math.max(s3Baseline.putMs, s3Baseline.getMs), 1)} times the slower.\n`;
  const loadCpu = load.wallSeconds > 0 ? (load.cpuSeconds / load.wallSeconds) * 100 : Number.NaN;
  const resources = `\n## Runner process\n\n${table(
    ["state", "CPU %", "RSS MiB"],
    [
      [`idle (${IDLE_SECONDS} s, one claim long poll open)`, fixed(idle.cpuPercent), fixed(idle.rssMiB)],
      [
        `under load (the runner runs above, ${fixed(load.wallSeconds)} s)`,
        fixed(loadCpu),
        fixed(load.maxRssMiB),
      ],
    ],
  )}\n\nCPU % of one core (utime + stime from /proc over the interval); RSS under load is the highest sampled every 200 ms.\n\n## Takeover after a runner is killed\n\nA \`bash\` call held by a runner, a second runner started, the first SIGKILLed: **${fixed(takeoverMs)} ms** from the kill to the call's activity completed on the second runner (goal ≤ 15 000 ms: ${takeoverMs <= 15_000 ? "met" : "not met"}). Default run settings: the heartbeat timeout is capped at 8 s for tool calls, then Temporal's retry (the unsafe call gets its unknown-outcome result, not a second run).\n`;
  const report = markdown + resources;
  writeResults("runner-latency", report, {
    machine,
    calls: CALLS,
    reps: REPS,
    samples,
    addedMedianMs: added,
    s3Baseline,
    idle,
    load: { ...load, cpuPercent: loadCpu },
    takeoverMs,
  });
  process.stdout.write(report);
});
