/**
 * The `keel` command as a subprocess (`node bin/keel.js`, exactly what the package's bin runs):
 * one-shot commands, and `keel dev` kept running while a test looks at it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { Server } from "node:http";
import { resolve } from "node:path";
import { apiConfigFromEnv } from "../../../src/api/config";
import { createApiRuntime } from "../../../src/api/runtime";
import { startApiServer } from "../../../src/api/server";
import { s3SettingsToEnv } from "../../../src/store/s3-config";
import { s3Settings, temporalAddress, temporalNamespace } from "../../support/integration-env";
import type { RunStage } from "../../support/run-harness";

export const projectRoot = resolve(__dirname, "../../..");
const keelBin = resolve(projectRoot, "bin/keel.js");

export interface KeelResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A `keel` process still running: what it printed so far, and its exit code once it exits. */
export interface RunningKeel {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

/** Starts `keel ...args` with exactly `env` (plus PATH and HOME). */
export function spawnKeel(args: string[], env: Record<string, string>, stdin?: string): RunningKeel {
  const child = spawn(process.execPath, [keelBin, ...args], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin?.end(stdin ?? "");
  const exited = new Promise<number | null>((done, fail) => {
    child.once("error", fail);
    child.once("close", (code) => done(code));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Runs `keel ...args` to completion with exactly `env` (plus PATH and HOME). */
export async function runKeel(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<KeelResult> {
  const running = spawnKeel(args, env, stdin);
  const code = await running.exited;
  return { code, stdout: running.stdout(), stderr: running.stderr() };
}

export interface KeelDev {
  child: ChildProcess;
  output(): string;
  /** Resolves with the output once it contains `text`; rejects if the process exits or on timeout. */
  waitFor(text: string, timeoutMs: number): Promise<string>;
  /** Sends `signal` and resolves with the exit code once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `keel dev` with its own data folder, no provider keys (so the local LLM server plays
 * the demo) and none of the test run's own server settings (so it starts its own servers);
 * `extraEnv` adds variables of the caller's environment (worker settings to pass on).
 */
export function startKeelDev(
  dataDir: string,
  args: string[] = [],
  extraEnv: Record<string, string> = {},
): KeelDev {
  const child = spawn(process.execPath, [keelBin, "dev", ...args], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...extraEnv, KEEL_DATA_DIR: dataDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const append = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  return {
    child,
    output: () => output,
    waitFor(text, timeoutMs) {
      return new Promise((done, fail) => {
        const timer = setTimeout(() => {
          cleanup();
          fail(new Error(`keel dev did not print "${text}" within ${timeoutMs} ms:\n${output}`));
        }, timeoutMs);
        const check = () => {
          if (!output.includes(text)) return;
          cleanup();
          done(output);
        };
        const onExit = () => {
          cleanup();
          fail(new Error(`keel dev exited before printing "${text}":\n${output}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          child.stdout?.off("data", check);
          child.off("exit", onExit);
        };
        child.stdout?.on("data", check);
        child.once("exit", onExit);
        check();
      });
    },
    async stop(signal = "SIGINT") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * Pids of live processes whose command line or environment mentions `marker` (a data folder):
 * the servers, the worker and their reapers all carry it.
 */
export function processesMentioning(marker: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const status = readFileSync(`/proc/${name}/stat`, "utf8");
      // A zombie has exited; only its exit status is left for its parent to collect.
      if (/^\d+ \(.*\) Z /.test(status)) continue;
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8");
      const environ = readFileSync(`/proc/${name}/environ`, "utf8");
      if (cmdline.includes(marker) || environ.includes(marker)) pids.push(Number(name));
    } catch {
      // the process ended while it was being read
    }
  }
  return pids;
}

/** A line of `output` that starts with `label` (after spaces), without the label. */
export function printed(output: string, label: string): string | undefined {
  const line = output.split("\n").find((candidate) => candidate.trimStart().startsWith(label));
  return line?.trimStart().slice(label.length).trim();
}

export interface CliApi {
  /** The API's base URL (KEEL_API_URL). */
  url: string;
  close(): Promise<void>;
}

/**
 * The Node API server exactly as `keel dev` and `src/api/server.ts` build it, over the stage's
 * Temporal, S3 and task queue, answering `keys` (API key → tenant).
 */
export async function startCliApi(
  stage: RunStage,
  keys: Record<string, string>,
  extraEnv: Record<string, string> = {},
): Promise<CliApi> {
  const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
  const runtime = createApiRuntime(
    apiConfigFromEnv({
      KEEL_TEMPORAL_ADDRESS: temporalAddress(),
      KEEL_TEMPORAL_NAMESPACE: temporalNamespace(),
      KEEL_TASK_QUEUE: stage.taskQueue,
      ...s3SettingsToEnv(s3Settings()),
      ...extraEnv,
      KEEL_API_KEYS: JSON.stringify(
        Object.fromEntries(Object.entries(keys).map(([key, tenant]) => [sha256(key), tenant])),
      ),
    }),
  );
  const started = await startApiServer(runtime.app, 0);
  const server = started.server as Server;
  return {
    url: `http://127.0.0.1:${started.port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await runtime.close();
    },
  };
}
