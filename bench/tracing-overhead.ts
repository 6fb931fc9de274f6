/**
 * What tracing costs on the hot path, in-process, interleaved rounds (medians):
 *   model call   a provider answering at once: the raw provider (baseline, what a worker with
 *                telemetry off calls: nothing is wrapped), the traced provider with telemetry off
 *                (the guard alone, had it been installed), and with telemetry on (span with the
 *                GenAI attributes, metrics, batched export to a local OTLP sink)
 *   API request  a Hono app answering at once: without the request middleware (baseline, what the
 *                API is with telemetry off: it is not installed) and with it, telemetry on
 * Writes bench/results/tracing-overhead.{json,md}. Run: `npx tsx bench/tracing-overhead.ts`
 * (BENCH_OPS per round [20000], BENCH_ROUNDS [7]).
 */
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import type { AssistantMessage } from "../src/core/messages";
import { emptyUsage } from "../src/core/usage";
import type { ModelInfo, Provider } from "../src/providers/types";
import { traceRequests } from "../src/telemetry/http";
import { tracedProvider } from "../src/telemetry/model-calls";
import { startTelemetry, type Telemetry } from "../src/telemetry/sdk";

const OPS = Number(process.env.BENCH_OPS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

const model: ModelInfo = {
  id: "bench-model",
  provider: "local",
  api: "openai-completions",
  contextWindow: 100_000,
  maxOutputTokens: 1_000,
  reasoning: false,
  imageInput: false,
};
const message: AssistantMessage = {
  role: "assistant",
  content: [{ type: "text", text: "ok" }],
  api: "openai-completions",
  provider: "local",
  model: "bench-model",
  usage: { ...emptyUsage(), input: 100, output: 10, totalTokens: 110 },
  stopReason: "stop",
  timestamp: 0,
};
const raw: Provider = { complete: async () => ({ message }) };
const traced = tracedProvider(raw);
const context = { messages: [{ role: "user" as const, content: "hi", timestamp: 0 }] };

const plainApp = new Hono().get("/v1/x", (c) => c.json({ ok: true }));
const tracedApp = new Hono().use("*", traceRequests()).get("/v1/x", (c) => c.json({ ok: true }));

/** Nanoseconds per operation over `OPS` calls. */
async function time(op: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < OPS; i += 1) await op();
  return Number(process.hrtime.bigint() - started) / OPS;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

async function main(): Promise<void> {
  // A local OTLP sink: accepts every export, so the "on" figures include the exporter's work.
  let exports = 0;
  const sink = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      exports += 1;
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((done) => sink.listen(0, "127.0.0.1", done));
  const address = sink.address();
  const endpoint = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;

  const variants: Record<string, { on: boolean; op: () => Promise<unknown> }> = {
    "model call: raw provider (off)": { on: false, op: () => raw.complete(model, context) },
    "model call: traced provider, telemetry off": { on: false, op: () => traced.complete(model, context) },
    "model call: traced provider, telemetry on": { on: true, op: () => traced.complete(model, context) },
    "API request: no middleware (off)": { on: false, op: async () => plainApp.request("/v1/x") },
    "API request: request spans, telemetry on": { on: true, op: async () => tracedApp.request("/v1/x") },
  };
  const samples: Record<string, number[]> = Object.fromEntries(
    Object.keys(variants).map((name) => [name, []]),
  );
  let telemetry: Telemetry | undefined;
  const settings = { endpoint, serviceName: "bench", captureContent: false, metricsIntervalMs: 1_000 };
  for (let round = 0; round <= ROUNDS; round += 1) {
    for (const [name, variant] of Object.entries(variants)) {
      if (variant.on && !telemetry) telemetry = startTelemetry(settings);
      if (!variant.on && telemetry) {
        await telemetry.shutdown();
        telemetry = undefined;
      }
      const ns = await time(variant.op);
      if (round > 0) samples[name]?.push(ns); // round 0 warms up
    }
  }
  await telemetry?.shutdown();
  sink.close();

  const results = Object.fromEntries(
    Object.entries(samples).map(([name, values]) => [name, Math.round(median(values))]),
  );
  const ratio = (a: string, b: string) =>
    Number(((results[a] as number) / (results[b] as number)).toFixed(2));
  const ratios = {
    "model call: guard off ÷ raw": ratio(
      "model call: traced provider, telemetry off",
      "model call: raw provider (off)",
    ),
    "model call: on ÷ raw": ratio(
      "model call: traced provider, telemetry on",
      "model call: raw provider (off)",
    ),
    "API request: on ÷ off": ratio(
      "API request: request spans, telemetry on",
      "API request: no middleware (off)",
    ),
  };
  const added = (a: string, b: string) =>
    Number((((results[a] as number) - (results[b] as number)) / 1000).toFixed(1));
  const addedMicroseconds = {
    "model call, telemetry on": added(
      "model call: traced provider, telemetry on",
      "model call: raw provider (off)",
    ),
    "API request, telemetry on": added(
      "API request: request spans, telemetry on",
      "API request: no middleware (off)",
    ),
  };
  const machine = {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    loadavg: loadavg().map((l) => l.toFixed(2)),
  };
  const date = new Date().toISOString();
  const json = {
    date,
    machine,
    ops: OPS,
    rounds: ROUNDS,
    nsPerOp: results,
    ratios,
    addedMicroseconds,
    otlpExports: exports,
  };
  const out = join(__dirname, "results");
  writeFileSync(join(out, "tracing-overhead.json"), `${JSON.stringify(json, null, 2)}\n`);
  const md = [
    "# Tracing overhead on the hot path",
    "",
    `${date}, ${machine.cpus} × ${machine.model}, load ${machine.loadavg.join(" ")}; ${OPS} operations per round, median of ${ROUNDS} interleaved rounds (\`bench/tracing-overhead.ts\`).`,
    "",
    "With telemetry off nothing is installed (no provider wrapper, no request middleware, no worker",
    'interceptor), so "off" is the baseline itself; the guard row shows what the wrapper would cost',
    "if it were installed while off. The operations answer at once, so the ratios are an upper bound:",
    "a real model call takes seconds and a real request milliseconds.",
    "",
    "| operation | ns/op |",
    "|---|---|",
    ...Object.entries(results).map(([name, ns]) => `| ${name} | ${ns} |`),
    "",
    "| ratio | value |",
    "|---|---|",
    ...Object.entries(ratios).map(([name, value]) => `| ${name} | ${value}× |`),
    "",
    "| added per operation | µs |",
    "|---|---|",
    ...Object.entries(addedMicroseconds).map(([name, value]) => `| ${name} | ${value} |`),
    "",
    `OTLP exports received by the local sink during the run: ${exports}.`,
    "",
  ].join("\n");
  writeFileSync(join(out, "tracing-overhead.md"), md);
  process.stdout.write(md);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
