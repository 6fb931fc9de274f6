/**
 * Runner latency: the same tool-heavy run (one `ls` call per turn) with its tools in the worker
 * and on a `keel runner` (same machine, same servers, interleaved), measured per call as the
 * tool activity's time from scheduled to completed in the run's history. The goal (issue 27):
 * at most 30 ms added at the median.
 *
 * Run: npx tsx bench/runner-latency.ts   (BENCH_CALLS=20 calls per run, BENCH_REPS=2 runs per variant)
 * Writes bench/results/runner-latency.md and .json.
 */

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { createApp } from "../src/api/app";
import { JsonObjects } from "../src/api/json-objects";
import { startApiServer } from "../src/api/server";
import { EnvironmentStore } from "../src/environments/store";
import { loadCatalog } from "../src/providers/models";
import { RunClient } from "../src/run-client/run-client";
import { createS3Client, s3SettingsToEnv } from "../src/store/s3-config";
import { SessionStore } from "../src/store/session-store";
import { ToolCallMarkers } from "../src/store/tool-call-markers";
import { WorkspaceSnapshots } from "../src/store/workspace-snapshots";
import { DEFAULT_RUN_SETTINGS, runWorkflowId } from "../src/workflows/types";
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
  await environments.create(TENANT, { name: "bench", kind: "runner", createdAt: new Date().toISOString() });
  const { token } = await environments.issueToken(TENANT, "bench");
  const runner = spawn(
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
  stack.llm.addScenario("calls", {
    turns: Array.from({ length: CALLS }, () => ({ toolCalls: [{ name: "ls", arguments: {} }] })),
    after: { text: "done" },
  });

  const samples: Record<"worker" | "runner", number[]> = { worker: [], runner: [] };
  try {
    for (let rep = 0; rep < REPS; rep++) {
      for (const variant of ["worker", "runner"] as const) {
        const ref = { tenantId: TENANT, sessionId: `latency-${variant}-${rep}` };
        const settings = {
          ...DEFAULT_RUN_SETTINGS,
          model: "local-chat",
          limits: { ...DEFAULT_RUN_SETTINGS.limits, maxTurns: CALLS + 5 },
          ...(variant === "runner" ? { environment: "bench" } : {}),
        };
        await runs.deliver(ref, { text: "[scenario:calls] go", mode: "auto" }, settings);
        await stack.client.workflow.getHandle(runWorkflowId(ref)).result();
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
  } finally {
    runner.kill("SIGTERM");
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
  const markdown = `# Runner latency\n\n${machineLine(machine)}\n\nPer tool call (\`ls\`), scheduled → completed in the run's history; ${CALLS} calls per run, ${REPS} run(s) per variant, interleaved.\n\n${table(["tools in", "calls", "p50 ms", "p90 ms"], [row("worker"), row("runner")])}\n\nAdded at the median: **${fixed(added)} ms** (goal ≤ ${TARGET_ADDED_MS} ms: ${added <= TARGET_ADDED_MS ? "met" : "not met"}).\n`;
  writeResults("runner-latency", markdown, {
    machine,
    calls: CALLS,
    reps: REPS,
    samples,
    addedMedianMs: added,
  });
  process.stdout.write(markdown);
});
