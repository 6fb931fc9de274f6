/**
 * A worker as its own node process, so its CPU and memory can be read apart. By default the
 * script is compiled first, as the worker image compiles it (esbuild, one file, packages left in
 * node_modules: see the Dockerfile), and run by plain node: what a deployment runs, without a
 * TypeScript loader's memory and start-up in the figures. `BENCH_WORKER=tsx` runs the sources
 * through tsx instead.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import { projectRoot } from "./stack";

/** How worker processes run: `compiled` (default, as deployed) or `tsx` (the sources as they are). */
export const WORKER_MODE: "compiled" | "tsx" = process.env.BENCH_WORKER === "tsx" ? "tsx" : "compiled";
/** Inside the project, so node finds the packages the compiled file leaves out. */
const BUILD_DIR = join(projectRoot, ".keel", "bench-build");
const compiled = new Map<string, string>();

/**
 * `BENCH_PROFILE_DIR=<dir>`: every worker process writes a V8 CPU profile there when it stops
 * (`--cpu-prof`; open it in Chrome's DevTools or read it with `bench/profile-summary.ts`).
 */
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
const profileArgs = PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`] : [];

/** The node arguments that run `script`: compiled once per process, or through tsx. */
function nodeArgs(script: string): string[] {
  if (WORKER_MODE === "tsx") return [...profileArgs, "--import", "tsx", join(projectRoot, script)];
  let file = compiled.get(script);
  if (!file) {
    mkdirSync(BUILD_DIR, { recursive: true });
    file = join(BUILD_DIR, `${basename(script, ".ts")}.js`);
    // The worker image's build line (Dockerfile), source map aside.
    execFileSync(
      join(projectRoot, "node_modules", ".bin", "esbuild"),
      [
        script,
        "--bundle",
        "--platform=node",
        "--target=node20",
        "--format=cjs",
        "--packages=external",
        "--log-level=error",
        `--outfile=${file}`,
      ],
      { cwd: projectRoot, stdio: "inherit" },
    );
    compiled.set(script, file);
  }
  return [...profileArgs, file];
}

const WORKER_START_TIMEOUT_MS = 120_000;
/** What a worker process prints (in a JSON log line) once it polls. */
export const WORKER_STARTED = '"worker started"';

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** SIGKILL: the worker dies without a word, as a crashed host would. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts `script` (relative to the project root) with `env` (plus PATH and HOME) and waits
 * until it prints {@link WORKER_STARTED}; fails with the process's output if it exits first.
 */
export async function spawnWorkerProcess(
  script: string,
  env: Record<string, string>,
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, nodeArgs(script), {
    cwd: projectRoot,
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
  });
  let output = "";
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  await new Promise<void>((done, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`${script} did not start:\n${output}`)),
      WORKER_START_TIMEOUT_MS,
    );
    child.stdout?.on("data", () => {
      if (output.includes(WORKER_STARTED)) {
        clearTimeout(timer);
        done();
      }
    });
    child.once("exit", () => {
      clearTimeout(timer);
      fail(new Error(`${script} exited early:\n${output}`));
    });
  });
  if (child.pid === undefined) throw new Error(`${script} has no pid`);
  return {
    child,
    pid: child.pid,
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
