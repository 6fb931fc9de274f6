#!/usr/bin/env node
// Where a `keel` call's start-up time goes: `keel --help` (no network; every client command
// loads the same modules) timed in three ways, interleaved in the same run so machine load hits
// each alike:
//   compiled       bin/keel.js running dist/cli/keel.js (scripts/build-cli.mjs)
//   sources        bin/keel.js running src/ through tsx (KEEL_CLI_SOURCES=1); the dev stack not loaded
//   sources+dev    the start before the CLI was compiled: tsx, main.ts and the dev stack's modules
// Writes bench/results/cli-start.{json,md}. Run: `npm run bench:cli-start` (ROUNDS=N, default 10).
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildCli } from "../scripts/build-cli.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const rounds = Number(process.env.ROUNDS ?? 10);
const bin = join(root, "bin/keel.js");
const modes = {
  compiled: { args: [bin, "--help"], env: {} },
  sources: { args: [bin, "--help"], env: { KEEL_CLI_SOURCES: "1" } },
  "sources+dev": {
    args: [
      "-r",
      "tsx/cjs",
      "-e",
      'require("./src/cli/dev.ts"); require("./src/cli/main.ts").cli()',
      "--",
      "--help",
    ],
    env: {},
  },
};

function timeOnce({ args, env }) {
  const start = process.hrtime.bigint();
  execFileSync(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: "ignore" });
  return Number(process.hrtime.bigint() - start) / 1e6;
}

await buildCli();
const samples = Object.fromEntries(Object.keys(modes).map((name) => [name, []]));
for (const mode of Object.values(modes)) timeOnce(mode); // warm the file cache and tsx's cache
for (let round = 0; round < rounds; round += 1)
  for (const [name, mode] of Object.entries(modes)) samples[name].push(timeOnce(mode));

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const stats = Object.fromEntries(
  Object.entries(samples).map(([name, values]) => [
    name,
    {
      medianMs: Math.round(median(values)),
      minMs: Math.round(Math.min(...values)),
      maxMs: Math.round(Math.max(...values)),
    },
  ]),
);
const result = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  loadAverage1m: Number(loadavg()[0].toFixed(2)),
  rounds,
  stats,
  speedup: {
    compiledVsSources: Number((stats.sources.medianMs / stats.compiled.medianMs).toFixed(2)),
    compiledVsBefore: Number((stats["sources+dev"].medianMs / stats.compiled.medianMs).toFixed(2)),
  },
};
const rows = Object.entries(stats).map(
  ([name, s]) => `| ${name} | ${s.medianMs} | ${s.minMs} | ${s.maxMs} |`,
);
const markdown = `# CLI start-up: \`keel --help\`

${result.date} · Node ${result.node} · ${result.cpus} CPUs · load average ${result.loadAverage1m} (shared machine) · ${rounds} rounds, interleaved

| how it runs | median ms | min ms | max ms |
| --- | ---: | ---: | ---: |
${rows.join("\n")}

Compiled is ${result.speedup.compiledVsSources}× faster than the sources without the dev stack and
${result.speedup.compiledVsBefore}× faster than the start before the CLI was compiled (sources+dev: tsx
transpiling main.ts and every module of the dev stack, which every command loaded).
`;
writeFileSync(join(root, "bench/results/cli-start.json"), `${JSON.stringify(result, null, 2)}\n`);
writeFileSync(join(root, "bench/results/cli-start.md"), markdown);
process.stdout.write(markdown);
