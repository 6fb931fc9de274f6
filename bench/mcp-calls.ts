/**
 * What an MCP tool call costs in a Keel run, against the server's own time and a built-in tool:
 * - latency: each `executeTool` activity's scheduled → completed time in the run's history, for
 *   `everything__echo` (server-everything on stdio, inside the sandbox) and for the built-in `ls`,
 *   against the same echo called directly with the SDK client (no sandbox, no Temporal, no S3);
 * - history bytes per turn: a run of TURNS turns each making CALLS MCP calls, against the same
 *   run making `ls` calls, plus the one-time listing.
 * Writes bench/results/mcp-calls.md and .json. Reproduce: `npx tsx bench/mcp-calls.ts`.
 */
import { mkdtempSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { temporal } from "@temporalio/proto";
import { DEFAULT_RUN_SETTINGS, type RunResult, type RunSettings, runWorkflowId } from "../src/contracts/runs";
import { RunClient } from "../src/run-client/run-client";
import { s3SettingsToEnv } from "../src/store/s3-config";
import { encodedBytes, fetchEvents } from "./support/history";
import {
  fixed,
  intFromEnv,
  machineInfo,
  machineLine,
  runBenchmark,
  table,
  writeResults,
} from "./support/report";
import { type BenchStack, projectRoot, startBenchStack } from "./support/stack";
import { spawnWorkerProcess } from "./support/worker-process";

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const TURNS = intFromEnv("BENCH_TURNS", 5);
const CALLS = intFromEnv("BENCH_CALLS", 4);
const nodeModules = realpathSync(join(projectRoot, "node_modules"));
const everythingJs = join(nodeModules, "@modelcontextprotocol/server-everything/dist/index.js");

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

/** The server's own time: echo called directly over stdio, after a warm-up. */
async function directEchoMs(reps: number): Promise<number[]> {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(
    new StdioClientTransport({ command: "node", args: [everythingJs, "stdio"], stderr: "pipe" }),
  );
  await client.callTool({ name: "echo", arguments: { message: "warm" } });
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const started = performance.now();
    await client.callTool({ name: "echo", arguments: { message: `m${i}` } });
    times.push(performance.now() - started);
  }
  await client.close();
  return times;
}

const ms = (event: HistoryEvent) => {
  const time = event.eventTime;
  return Number(time?.seconds ?? 0) * 1000 + Math.floor((time?.nanos ?? 0) / 1e6);
};

/** scheduled → completed of every executeTool activity, and the history's bytes. */
function toolActivityMs(events: HistoryEvent[]): number[] {
  const scheduled = new Map<string, number>();
  const out: number[] = [];
  for (const event of events) {
    if (event.activityTaskScheduledEventAttributes?.activityType?.name === "executeTool")
      scheduled.set(String(event.eventId), ms(event));
    const done = event.activityTaskCompletedEventAttributes;
    if (done) {
      const start = scheduled.get(String(done.scheduledEventId));
      if (start !== undefined) out.push(ms(event) - start);
    }
  }
  return out;
}

async function runWith(
  stack: BenchStack,
  runs: RunClient,
  name: string,
  call: { name: string; arguments: object },
  extra: Partial<RunSettings>,
) {
  const scenario = `bench-${name}`;
  stack.llm.addScenario(scenario, {
    turns: Array.from({ length: TURNS }, () => ({
      toolCalls: Array.from(
        { length: CALLS },
        () => call as { name: string; arguments: Record<string, unknown> },
      ),
    })),
    after: { text: "done" },
  });
  const ref = { tenantId: "bench", sessionId: `${name}-${Date.now()}` };
  await runs.deliver(
    ref,
    { text: `[scenario:${scenario}] go`, mode: "auto" },
    {
      ...DEFAULT_RUN_SETTINGS,
      model: "local-chat",
      toolExecution: "sequential",
      ...extra,
    },
  );
  const result = (await stack.client.workflow.getHandle(runWorkflowId(ref)).result()) as RunResult;
  if (result.status !== "completed") throw new Error(`${name}: ${result.status} ${result.reason}`);
  const events = await fetchEvents(stack.client, runWorkflowId(ref));
  const listing = events.filter((event) => {
    const scheduledId = event.activityTaskCompletedEventAttributes?.scheduledEventId;
    const scheduled = events.find((candidate) => String(candidate.eventId) === String(scheduledId));
    return scheduled?.activityTaskScheduledEventAttributes?.activityType?.name === "listMcpTools";
  });
  return { times: toolActivityMs(events), bytes: encodedBytes(events), listingBytes: encodedBytes(listing) };
}

async function main(): Promise<void> {
  const machine = machineInfo();
  const stack = await startBenchStack();
  try {
    const taskQueue = `mcp-bench-${Date.now()}`;
    const worker = await spawnWorkerProcess("src/worker/main.ts", {
      KEEL_TEMPORAL_ADDRESS: stack.temporal.address,
      KEEL_TEMPORAL_NAMESPACE: stack.temporal.namespace,
      KEEL_TASK_QUEUE: taskQueue,
      KEEL_WORKFLOW_BUNDLE: stack.keelBundlePath,
      KEEL_WORKSPACE_ROOT: mkdtempSync(join(stack.dir, "workspaces-")),
      ...s3SettingsToEnv(stack.s3.settings),
      OPENAI_API_KEY: "local-key",
      OPENAI_BASE_URL: stack.llm.openaiBaseURL,
      KEEL_MCP_MOUNTS: nodeModules,
    });
    const runs = new RunClient(stack.client, taskQueue);
    const direct = await directEchoMs(TURNS * CALLS);
    const mcp = await runWith(
      stack,
      runs,
      "mcp",
      { name: "everything__echo", arguments: { message: "hello" } },
      {
        mcpServers: [{ name: "everything", command: "node", args: [everythingJs, "stdio"] }],
      },
    );
    const builtin = await runWith(stack, runs, "ls", { name: "ls", arguments: {} }, {});
    await worker.stop();
    // The first MCP call of the run is on a connection the listing opened; all are counted.
    const row = (label: string, times: number[]) => [
      label,
      fixed(median(times), 1),
      fixed(Math.max(...times), 1),
      times.length,
    ];
    const markdown = [
      "# MCP calls",
      "",
      machineLine(machine),
      "",
      `A run of ${TURNS} turns, each making ${CALLS} sequential calls, on one worker; server-everything's \`echo\` on stdio inside the sandbox, against the built-in \`ls\` and against \`echo\` called directly over stdio with the SDK client (the server's own time).`,
      "",
      table(
        ["call", "median ms", "max ms", "calls"],
        [
          row("`everything__echo` as a Keel tool activity (scheduled → completed)", mcp.times),
          row("`ls` as a Keel tool activity (scheduled → completed)", builtin.times),
          row("`echo` direct (the server's own time)", direct),
        ],
        ["---", "---:", "---:", "---:"],
      ),
      "",
      `Added latency per MCP call over the server's own time: ${fixed(median(mcp.times) - median(direct), 1)} ms (median); over a built-in tool call: ${fixed(median(mcp.times) - median(builtin.times), 1)} ms.`,
      "",
      table(
        ["run", "history bytes", "per turn"],
        [
          ["MCP calls", mcp.bytes, fixed(mcp.bytes / TURNS, 0)],
          ["`ls` calls", builtin.bytes, fixed(builtin.bytes / TURNS, 0)],
        ],
        ["---", "---:", "---:"],
      ),
      "",
      `The one-time listing result (server-everything's 13 tools with their schemas) is ${mcp.listingBytes} bytes of the MCP run's history; each llmTurn input names it by digest (see docs/tools.md, "Listed once, recorded"; before the list was stored by digest, every llmTurn input carried it: 16831 bytes per turn).`,
      "",
      "Reproduce: `npx tsx bench/mcp-calls.ts` (BENCH_TURNS, BENCH_CALLS).",
    ].join("\n");
    console.log(`\n${markdown}\n`);
    writeResults("mcp-calls", markdown, { machine, turns: TURNS, calls: CALLS, mcp, builtin, direct });
  } finally {
    await stack.close();
  }
}

runBenchmark(main);
