/**
 * Cost of the workspace file layer for the file tools: `read` of a small file, and `grep` and
 * `find` over a tree of BENCH_FILES files (2,000 by default: 20 folders × 2 subfolders × 50
 * files of ~1 KB, plus a .gitignore and ignored logs). Baseline in the same run: the tools of
 * BENCH_BASELINE_REF (default: the last commit whose tools checked a real path, then opened it by
 * name), imported from a copy of that commit's src/. Calls alternate between the two on the same
 * workspace, so both see the same machine load; each variant's results are checked equal.
 *
 * Run: npx tsx bench/workspace-fs.ts   (BENCH_FILES=2000 BENCH_READS=2000 BENCH_WALKS=30)
 * Writes bench/results/workspace-fs.md and .json.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import * as current from "../src/tools";
import { DEFAULT_SANDBOX_POLICY } from "../src/tools/sandbox";
import { prepareWorkspace, workspaceFor } from "../src/tools/workspace";
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
import { projectRoot } from "./support/stack";

/** The last commit whose file tools resolved a real path and then opened it by name. */
const BEFORE_WORKSPACE_FS = "41198f4";
const FILES = intFromEnv("BENCH_FILES", 2_000);
const READS = intFromEnv("BENCH_READS", 2_000);
const WALKS = intFromEnv("BENCH_WALKS", 30);
const FILES_PER_FOLDER = 50;

type Tools = Pick<typeof current, "runToolCall">;

/** The baseline's tools: `src/` of `ref` copied from git beside this project's node_modules. */
function baselineTools(dir: string, ref: string): Tools {
  const archive = execFileSync("git", ["archive", ref, "src"], {
    cwd: projectRoot,
    maxBuffer: 256 * 1024 ** 2,
  });
  execFileSync("tar", ["x", "-C", dir], { input: archive });
  symlinkSync(join(projectRoot, "node_modules"), join(dir, "node_modules"));
  return require(join(dir, "src/tools/index.ts")) as Tools;
}

/** FILES files of ~1 KB in two folder levels; one file in 40 holds "needle" (grep scans all). */
function populate(dir: string): void {
  writeFileSync(join(dir, ".gitignore"), "*.log\n");
  for (let i = 0; i < FILES; i++) {
    const folder = Math.floor(i / FILES_PER_FOLDER);
    const sub = join(dir, "src", `pkg${Math.floor(folder / 2)}`, `part${folder % 2}`);
    mkdirSync(sub, { recursive: true });
    const lines = Array.from(
      { length: 24 },
      (_, line) => `export const value${line} = ${i * 100 + line}; // filler`,
    );
    if (i % 40 === 0) lines[12] = "// needle: the line grep looks for";
    writeFileSync(join(sub, `file${i}.ts`), `${lines.join("\n")}\n`);
    if (i % 100 === 0) writeFileSync(join(sub, `debug${i}.log`), "needle in an ignored log\n");
  }
}

interface Measured {
  operation: string;
  calls: number;
  baselineMs: number;
  currentMs: number;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

/** Median time of `calls` calls of one tool call in each variant, alternating; results compared. */
async function measure(
  operation: string,
  calls: number,
  call: { name: string; arguments: Record<string, unknown> },
  variants: { baseline: Tools; current: Tools },
  ctx: current.ToolContext,
): Promise<Measured> {
  const times = { baseline: [] as number[], current: [] as number[] };
  const texts = { baseline: "", current: "" };
  for (let i = 0; i < calls; i++) {
    for (const name of i % 2 === 0
      ? (["baseline", "current"] as const)
      : (["current", "baseline"] as const)) {
      const started = performance.now();
      const out = await variants[name].runToolCall(call, ctx);
      times[name].push(performance.now() - started);
      if (out.isError) throw new Error(`${name} ${operation} failed: ${JSON.stringify(out.content)}`);
      texts[name] = JSON.stringify(out.content);
    }
  }
  if (texts.baseline !== texts.current) throw new Error(`${operation}: baseline and current results differ`);
  return { operation, calls, baselineMs: median(times.baseline), currentMs: median(times.current) };
}

async function main(): Promise<void> {
  const baselineRef = process.env.BENCH_BASELINE_REF ?? BEFORE_WORKSPACE_FS;
  const base = mkdtempSync(join(tmpdir(), "keel-bench-wsfs-"));
  try {
    const baseline = baselineTools(mkdtempSync(join(base, "baseline-")), baselineRef);
    const workspace = workspaceFor(join(base, "root"), "tenant", "session");
    await prepareWorkspace(workspace);
    populate(workspace.dir);
    const ctx: current.ToolContext = { workspace, sandbox: DEFAULT_SANDBOX_POLICY };
    const variants = { baseline, current };
    console.log(`workspace-fs: ${FILES} files, baseline ${baselineRef.slice(0, 7)}`);
    const results = [
      await measure(
        "read (1 KB file)",
        READS,
        { name: "read", arguments: { path: "src/pkg3/part1/file350.ts" } },
        variants,
        ctx,
      ),
      await measure(
        `grep over ${FILES} files`,
        WALKS,
        { name: "grep", arguments: { pattern: "needle" } },
        variants,
        ctx,
      ),
      await measure(
        `find over ${FILES} files`,
        WALKS,
        { name: "find", arguments: { pattern: "*.ts", limit: FILES } },
        variants,
        ctx,
      ),
    ];
    for (const result of results) {
      console.log(
        `${result.operation}: ${fixed(result.baselineMs, 3)} ms → ${fixed(result.currentMs, 3)} ms`,
      );
    }
    const machine = machineInfo();
    const markdown = [
      "# Workspace file layer",
      "",
      machineLine(machine),
      "",
      `Median time per tool call (\`runToolCall\`: validation included), the tools of ${baselineRef.slice(0, 7)} (a real path checked, then opened by name) against the current ones (every path walked through held directory descriptors, \`src/tools/workspace-fs.ts\`), alternating on one workspace of ${FILES} files (${FILES_PER_FOLDER} per folder, two folder levels, ~1 KB each, a .gitignore); both return the same results.`,
      "",
      table(
        ["operation", "calls per variant", "baseline (ms)", "current (ms)", "current / baseline"],
        results.map((result) => [
          result.operation,
          result.calls,
          fixed(result.baselineMs, 3),
          fixed(result.currentMs, 3),
          ratio(result.currentMs / result.baselineMs),
        ]),
        ["---", "---:", "---:", "---:", "---:"],
      ),
      "",
      "Reproduce: `npx tsx bench/workspace-fs.ts` (BENCH_FILES, BENCH_READS, BENCH_WALKS, BENCH_BASELINE_REF).",
    ].join("\n");
    console.log(
      `wrote ${writeResults("workspace-fs", markdown, { machine, baselineRef, files: FILES, results })}`,
    );
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

runBenchmark(main);
