/**
 * `npm run dev` as a person runs it: the keyless quick start does visible work, `kill -TERM` /
 * `kill -INT` on the npm process stops the whole stack, the worker's log is JSON lines (no
 * terminal colour codes), and a run that was mid-way when the stack stopped finishes after the
 * stack is started again on the same data folder. Prints how long that took after the restart
 * (docs/local-stack.md).
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DEV_API_KEY } from "../../../src/cli/dev";
import { freePort } from "../../../src/cli/devstack/ports";
import { SCENARIO_HINT } from "../../../src/providers/local-server";
import { testTmpDir, uniqueName } from "../../support/integration-env";
import { holdKeelDevLock, KEEL_DEV_LOCK_WAIT_MS } from "../../support/keel-dev-lock";
import { processesMentioning, projectRoot, runKeel } from "./keel-process";

const keelBin = join(projectRoot, "bin/keel.js");

const STACK_START_TIMEOUT_MS = 180_000;
const STOP_TIMEOUT_MS = 30_000;
const RESUME_TIMEOUT_MS = 150_000;
const READY_LINE = "Press Ctrl-C to stop.";

jest.setTimeout(2 * STACK_START_TIMEOUT_MS + RESUME_TIMEOUT_MS + 60_000);

interface NpmDev {
  child: ChildProcess;
  output(): string;
  waitFor(text: string, timeoutMs: number): Promise<void>;
  /** Signals the npm process (not its children) and resolves with its exit code. */
  signal(signal: NodeJS.Signals): Promise<number | null>;
}

/** `npm run dev -- --no-demo` with its own data folder and no provider keys. */
function startNpmDev(dataDir: string): NpmDev {
  const child = spawn("npm", ["run", "--silent", "dev", "--", "--no-demo"], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, KEEL_DATA_DIR: dataDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  return {
    child,
    output: () => output,
    async waitFor(text, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!output.includes(text)) {
        if (child.exitCode !== null) throw new Error(`npm run dev exited:\n${output}`);
        if (Date.now() > deadline) throw new Error(`npm run dev did not print "${text}":\n${output}`);
        await sleep(200);
      }
    },
    async signal(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const ignored = new Promise<never>((_, fail) => {
        timer = setTimeout(
          () => fail(new Error(`npm run dev ignored ${signal}:\n${output}`)),
          STOP_TIMEOUT_MS,
        );
      });
      try {
        return await Promise.race([exited, ignored]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

function apiEnvOf(output: string): Record<string, string> {
  const url = output.match(/API\s+(http:\/\/127\.0\.0\.1:\d+) \(tenant/)?.[1];
  if (!url) throw new Error(`no API URL in:\n${output}`);
  return { KEEL_API_URL: url, KEEL_API_KEY: DEV_API_KEY };
}

/** Waits until nothing that mentions `dataDir` runs any more. */
async function noProcessesLeft(dataDir: string): Promise<number[]> {
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  let left = processesMentioning(dataDir);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(250);
    left = processesMentioning(dataDir);
  }
  return left;
}

const RESTART_SCENARIO = "dev-restart";

/** The local LLM server's URL the stack printed. */
function llmUrlOf(output: string): string {
  const url = output.match(/local LLM server (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
  if (!url) throw new Error(`no local LLM server URL in:\n${output}`);
  return url;
}

/** Teaches the stack's local LLM server a run whose first turn is a long bash call. */
async function addRestartScenario(output: string): Promise<void> {
  const url = llmUrlOf(output);
  const response = await fetch(`${url}/_scenarios`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      [RESTART_SCENARIO]: {
        turns: [{ toolCalls: [{ name: "bash", arguments: { command: "sleep 25; echo slept" } }] }],
        after: { text: "finished" },
      },
    }),
  });
  expect(response.status).toBe(200);
}

/** Follows the session's events (`keel events --follow --json`) until one matches. */
function untilEvent(
  sessionId: string,
  env: Record<string, string>,
  matches: (event: { type: string; turn?: number }) => boolean,
): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [keelBin, "events", sessionId, "--follow", "--json"], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let buffered = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      if (lines.some((line) => matches(JSON.parse(line)))) {
        child.kill("SIGKILL");
        done();
      }
    });
    child.once("exit", () => fail(new Error("the run ended before the expected event")));
  });
}

let dataDir: string;
let dev: NpmDev | undefined;

let releaseStackLock: (() => void) | undefined;
beforeAll(async () => {
  releaseStackLock = await holdKeelDevLock();
}, KEEL_DEV_LOCK_WAIT_MS);

beforeAll(async () => {
  dataDir = mkdtempSync(join(testTmpDir(), "keel-npm-dev-"));
  // The local LLM server's port, remembered in the data folder as keel dev remembers it: a port
  // of this test's own, so another stack started beside it (on the default 8788) cannot take it
  // between the two starts.
  writeFileSync(join(dataDir, "llm-port"), String(await freePort()));
});

afterAll(async () => {
  try {
    if (dev) await dev.signal("SIGKILL").catch(() => undefined);
    for (const pid of processesMentioning(dataDir)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  } finally {
    releaseStackLock?.();
  }
});

test("npm run dev: quick start, kill -TERM / -INT on npm, JSON worker log, a run resumes after a restart", async () => {
  dev = startNpmDev(dataDir);
  await dev.waitFor(READY_LINE, STACK_START_TIMEOUT_MS);
  let env = apiEnvOf(dev.output());
  const firstLlmUrl = llmUrlOf(dev.output());

  // Keyless, a prompt without a scenario tag does visible work with a tool.
  const quick = await runKeel(
    ["run", "list the files", "--workspace-dir", "examples/sample-project", "--follow"],
    env,
  );
  expect(quick.code).toBe(0);
  expect(quick.stdout).toMatch(/⚙ ls/);
  expect(quick.stdout).toContain("README.md");
  expect(quick.stdout).toContain(SCENARIO_HINT);

  // A run that is stopped mid-way, in a tool call longer than the stack's stop grace (so the
  // worker is killed during it): the call is retried once its heartbeat times out.
  const sessionId = uniqueName("restart");
  await addRestartScenario(dev.output());
  const started = await runKeel(
    ["run", `[scenario:${RESTART_SCENARIO}] build`, "--session", sessionId, "--json"],
    env,
  );
  expect(started.code).toBe(0);
  await untilEvent(sessionId, env, (event) => event.type === "tool_execution_start");

  // SIGTERM to npm itself (not to its process group) stops everything.
  expect(await dev.signal("SIGTERM")).toBe(0);
  expect(dev.output()).toContain("Stopped.");
  expect(await noProcessesLeft(dataDir)).toEqual([]);

  // Every line the worker wrote is a JSON object, without terminal colour codes.
  const workerLog = readFileSync(join(dataDir, "worker.log"), "utf8");
  expect(workerLog).not.toContain("\x1b[");
  const notJson = workerLog
    .split("\n")
    .filter((line) => line.trim())
    .filter((line) => {
      try {
        return typeof JSON.parse(line) !== "object";
      } catch {
        return true;
      }
    });
  expect(notJson).toEqual([]);

  // Started again on the same data folder, the stopped run finishes.
  dev = startNpmDev(dataDir);
  await dev.waitFor(READY_LINE, STACK_START_TIMEOUT_MS);
  const upAt = Date.now();
  const restarted = dev.output().slice(dev.output().lastIndexOf("Keel local stack is up"));
  env = apiEnvOf(restarted);
  // The local LLM server is back at the URL scenarios were registered at (its port was free).
  expect(llmUrlOf(restarted)).toBe(firstLlmUrl);
  // The new local LLM server knows only the built-in scenarios; the run's next model call
  // comes after the retried tool call.
  await addRestartScenario(restarted);
  const followed = await runKeel(["events", sessionId, "--follow"], env);
  const resumedAfterMs = Date.now() - upAt;
  expect(followed.code).toBe(0);
  expect(followed.stdout).toContain("■ run completed");
  expect(followed.stdout).toContain("● finished");
  process.stdout.write(
    `the stopped run completed ${(resumedAfterMs / 1000).toFixed(1)} s after the restart\n`,
  );

  // SIGINT to npm (what Ctrl-C sends to the whole terminal group, here to npm alone) too.
  expect(await dev.signal("SIGINT")).toBe(0);
  expect(await noProcessesLeft(dataDir)).toEqual([]);
  dev = undefined;
});
