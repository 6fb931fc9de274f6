/**
 * Live streaming latency and cost: how long a token takes from the LLM server writing it to an
 * SSE client of the API reading it (p50/p95), and what following a run costs the workers — the
 * run's workflow tasks and the queries the API asks — with 1 and with 50 SSE clients on one API
 * process. Everything runs here: Temporal dev server, S3 server, local LLM server (paced), Keel
 * workers in process, the API as a Node HTTP server, clients over HTTP with `fetch`.
 *
 * Run: npx tsx bench/stream-latency.ts   (BENCH_WORDS=120, BENCH_TOKENS_PER_SECOND=30,
 * BENCH_CLIENTS=1,50, BENCH_INTERVALS_MS=100,250). Writes bench/results/stream-latency.md and .json.
 */
import { createHash } from "node:crypto";
import { Client } from "@temporalio/client";
import { createParser } from "eventsource-parser";
import { DEFAULT_LIVE_EVENT_OPTIONS } from "../src/activities/live-events";
import { createApp } from "../src/api/app";
import { startApiServer } from "../src/api/server";
import { runWorkflowId } from "../src/contracts/runs";
import type { LiveEvent } from "../src/core/events";
import { loadCatalog } from "../src/providers/models";
import { RunClient } from "../src/run-client/run-client";
import { JsonObjects } from "../src/store/json-objects";
import { createS3Client } from "../src/store/s3-config";
import { SessionStore } from "../src/store/session-store";
import { WorkspaceSnapshots } from "../src/store/workspace-snapshots";
import { countEventsOfType, fetchEvents } from "./support/history";
import { startInProcessWorkers } from "./support/keel-workers";
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
import { benchSettings } from "./support/runs";
import { startBenchStack } from "./support/stack";

const WORDS = intFromEnv("BENCH_WORDS", 120);
const TOKENS_PER_SECOND = intFromEnv("BENCH_TOKENS_PER_SECOND", 30);
const CLIENT_COUNTS = intListFromEnv("BENCH_CLIENTS", [1, 50]);
/** Coalescing intervals compared (KEEL_LIVE_EVENTS_INTERVAL_MS). */
const INTERVALS_MS = intListFromEnv("BENCH_INTERVALS_MS", [100, 250]);
const API_KEY = "bench-stream-key";
const TENANT = "bench";

interface Sample {
  intervalMs: number;
  clients: number;
  p50: number;
  p95: number;
  max: number;
  runSeconds: number;
  workflowTasks: number;
  workflowTasksPerSecond: number;
  apiQueries: number;
  apiQueriesPerSecond: number;
  wordsPerClient: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Reads an SSE response until agent_end; records when each word `w<i>` of a text delta arrived. */
async function readClient(response: Response, arrived: Map<number, number>[]): Promise<void> {
  const mine = new Map<number, number>();
  arrived.push(mine);
  let done = false;
  const parser = createParser({
    onEvent: (message) => {
      if (message.event === "agent_end") done = true;
      if (message.event !== "message_update") return;
      const event = JSON.parse(message.data) as LiveEvent;
      if (event.type !== "message_update" || event.assistantMessageEvent.type !== "text_delta") return;
      const now = Date.now();
      for (const word of event.assistantMessageEvent.delta.split(/\s+/)) {
        const index = /^w(\d+)$/.exec(word)?.[1];
        if (index !== undefined && !mine.has(Number(index))) mine.set(Number(index), now);
      }
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (done) break;
  }
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(
    `stream-latency: ${WORDS} words at ${TOKENS_PER_SECOND}/s, clients ${CLIENT_COUNTS.join(", ")}`,
  );
  const stack = await startBenchStack();
  const s3 = createS3Client(stack.s3.settings);
  let queries = 0;
  // The API's own client, counting the queries it asks (each is a task for a worker).
  const apiClient = new Client({
    connection: stack.connection,
    namespace: stack.temporal.namespace,
    interceptors: {
      workflow: [
        {
          query: (input, next) => {
            queries += 1;
            return next(input);
          },
        },
      ],
    },
  });
  let keel: Awaited<ReturnType<typeof startInProcessWorkers>> | undefined;
  let runs = new RunClient(apiClient, "unused");
  const app = createApp({
    config: {
      apiKeys: { [createHash("sha256").update(API_KEY).digest("hex")]: TENANT },
      bodyLimitBytes: 256 * 1024,
      allowDirectoryWorkspaces: false,
      sseMaxSeconds: 0,
      defaultModel: "local-chat",
    },
    runs: async () => runs,
    store: new SessionStore(s3, stack.s3.settings),
    snapshots: new WorkspaceSnapshots(s3, stack.s3.settings),
    objects: new JsonObjects(s3, stack.s3.settings.bucket, stack.s3.settings.prefix),
    catalog: loadCatalog(),
    log: () => undefined,
  });
  const { server, port } = await startApiServer(app, 0);
  const base = `http://127.0.0.1:${port}`;
  const samples: Sample[] = [];
  try {
    const text = Array.from({ length: WORDS }, (_, index) => `w${index}`).join(" ");
    for (const intervalMs of INTERVALS_MS) {
      keel = await startInProcessWorkers(stack, `bench-stream-latency-${intervalMs}`, stack.s3.settings, {
        liveEvents: { ...DEFAULT_LIVE_EVENT_OPTIONS, intervalMs },
      });
      runs = new RunClient(apiClient, keel.taskQueue);
      for (const clients of CLIENT_COUNTS) {
        const scenario = `latency-${intervalMs}-${clients}`;
        stack.llm.addScenario(scenario, { turns: [{ text }] });
        stack.llm.addFaults([
          {
            kind: "slow",
            match: { scenario },
            times: 1,
            latencyMs: 1_000,
            tokensPerSecond: TOKENS_PER_SECOND,
          },
        ]);
        const sessionId = `latency-${intervalMs}-${clients}-${Date.now()}`;
        const ref = { tenantId: TENANT, sessionId };
        const started = Date.now();
        await runs.deliver(ref, { text: `[scenario:${scenario}] go`, mode: "auto" }, benchSettings(1));
        const queriesBefore = queries;
        const arrived: Map<number, number>[] = [];
        await Promise.all(
          Array.from({ length: clients }, async () => {
            const response = await fetch(`${base}/v1/sessions/${sessionId}/events`, {
              headers: { authorization: `Bearer ${API_KEY}`, accept: "text/event-stream" },
            });
            await readClient(response, arrived);
          }),
        );
        const runSeconds = (Date.now() - started) / 1000;
        const apiQueries = queries - queriesBefore;
        const call = stack.llm.journal().find((entry) => entry.scenario === scenario);
        const sentAt = call?.deltaSentAt ?? [];
        if (sentAt.length !== WORDS)
          throw new Error(`expected ${WORDS} deltas sent, the server sent ${sentAt.length}`);
        const latencies = arrived
          .flatMap((client) => [...client.entries()].map(([index, at]) => at - sentAt[index]!))
          .sort((a, b) => a - b);
        const events = await fetchEvents(stack.client, runWorkflowId(ref));
        const workflowTasks = countEventsOfType(events, "WORKFLOW_TASK_COMPLETED");
        const sample: Sample = {
          intervalMs,
          clients,
          p50: percentile(latencies, 50),
          p95: percentile(latencies, 95),
          max: latencies.at(-1) ?? Number.NaN,
          runSeconds,
          workflowTasks,
          workflowTasksPerSecond: workflowTasks / runSeconds,
          apiQueries,
          apiQueriesPerSecond: apiQueries / runSeconds,
          wordsPerClient: latencies.length / clients,
        };
        console.log(
          `${intervalMs} ms, ${clients} clients: p50 ${sample.p50} ms, p95 ${sample.p95} ms, ${fixed(sample.workflowTasksPerSecond)} workflow tasks/s, ${fixed(sample.apiQueriesPerSecond)} queries/s`,
        );
        samples.push(sample);
      }
      await keel.stop();
      keel = undefined;
    }
  } finally {
    server.close();
    await keel?.stop();
    s3.destroy();
    await stack.close();
  }

  const markdown = `# Stream latency benchmark

Token → SSE client latency of live deltas, and what following a run costs, with 1 and with 50
SSE clients of one API process. The local LLM server writes a ${WORDS}-word answer (\`w0 w1 …\`)
at ${TOKENS_PER_SECOND} words a second through the OpenAI Chat Completions wire; latency is from
the moment it wrote a word to the moment a client read the delta holding it. The path: worker
(provider SDK stream → coalescing, one batch per \`KEEL_LIVE_EVENTS_INTERVAL_MS\` (default 250 ms) → signal to the run's workflow
stream) → API feed (one per run per process; the run's \`stream\` query every 100 ms while items
come and for a second after, then slowing to 500 ms) → SSE over HTTP → client.

${machineLine(machine)}
Generated by \`npx tsx bench/stream-latency.ts\` (BENCH_WORDS=${WORDS}, BENCH_TOKENS_PER_SECOND=${TOKENS_PER_SECOND}, BENCH_CLIENTS=${CLIENT_COUNTS.join(",")}, BENCH_INTERVALS_MS=${INTERVALS_MS.join(",")}).
Everything runs on this machine: Temporal dev server, S3 server, workers and API in one process.

${table(
  [
    "interval",
    "SSE clients",
    "latency p50",
    "latency p95",
    "max",
    "words read per client",
    "run's workflow tasks/s",
    "API queries/s",
  ],
  samples.map((sample) => [
    `${sample.intervalMs} ms`,
    sample.clients,
    `${sample.p50} ms`,
    `${sample.p95} ms`,
    `${sample.max} ms`,
    fixed(sample.wordsPerClient, 0),
    fixed(sample.workflowTasksPerSecond, 1),
    fixed(sample.apiQueriesPerSecond, 1),
  ]),
)}

- Workflow tasks are the run's own (its history: activities, and one per batch of deltas); API
  queries are every query the API process asked while the clients followed the run (the feed's
  \`stream\` query, and the state query of each client's connect) — each is a query task for a
  worker. The feed is shared, so 50 clients cost about what 1 does; before, each client polled
  the run's \`events\` query every 300 ms (≈ 3.3 queries/s per client, 167/s for 50).
- The latency is coalescing (up to the interval) + the signal + the feed's poll interval (up to 100 ms
  while the answer streams) + delivery; its floor is set by the two intervals.
`;
  const path = writeResults("stream-latency", markdown, {
    machine,
    parameters: {
      words: WORDS,
      tokensPerSecond: TOKENS_PER_SECOND,
      clients: CLIENT_COUNTS,
      intervalsMs: INTERVALS_MS,
    },
    samples,
  });
  console.log(markdown);
  console.log(`wrote ${path}`);
}

runBenchmark(main);
