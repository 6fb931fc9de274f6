/**
 * An integration stage for runs: the local LLM server (in this process), Keel workers as separate
 * processes (so a test can SIGKILL one), a RunClient and a session store on the real servers.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Client, Connection } from "@temporalio/client";
import {
  DEFAULT_RUN_SETTINGS,
  type RunResult,
  type RunSettings,
  type RunState,
  runWorkflowId,
  type SessionRef,
} from "../../src/contracts/runs";
import { convertToLlm } from "../../src/core/messages";
import { checkInvariants } from "../../src/core/sanitize";
import type { SessionEntry } from "../../src/core/session-types";
import { type LocalLlmServer, startLocalLlmServer } from "../../src/providers/local-server";
import { clientInterceptors } from "../../src/run-client/client-interceptors";
import { RunClient } from "../../src/run-client/run-client";
import { keelDataConverter } from "../../src/store/payload-storage";
import { s3SettingsToEnv } from "../../src/store/s3-config";
import { SessionStore } from "../../src/store/session-store";
import {
  s3Client,
  s3Settings,
  temporalAddress,
  temporalNamespace,
  testTmpDir,
  uniqueName,
  workflowBundlePath,
} from "./integration-env";

const projectRoot = resolve(__dirname, "../..");
/** How long `stop()` waits after SIGTERM: below jest's 60 s hook timeout, so a hung worker fails the hook with its output instead of hanging the suite. */
const STOP_TIMEOUT_MS = 50_000;

export interface WorkerProcess {
  child: ChildProcess;
  ownTaskQueue: string;
  output(): string;
  /** SIGKILL: the process dies without draining (a crash). */
  kill(): Promise<void>;
  /** SIGTERM: graceful shutdown. */
  stop(): Promise<void>;
  /** Resolves once the process has ended on its own (a failpoint crash) or by a signal. */
  exited(): Promise<void>;
}

export interface RunStage {
  llm: LocalLlmServer;
  runs: RunClient;
  client: Client;
  store: SessionStore;
  taskQueue: string;
  workspaceRoot: string;
  tenantId: string;
  startWorker(extraEnv?: Record<string, string>): Promise<WorkerProcess>;
  settings(overrides?: Partial<RunSettings>): RunSettings;
  newSession(): { tenantId: string; sessionId: string };
  result(ref: { tenantId: string; sessionId: string }): Promise<RunResult>;
  entries(ref: { tenantId: string; sessionId: string }): Promise<SessionEntry[]>;
  /** Stops every worker this stage started (so a failed test leaves none behind for the next). */
  stopWorkers(): Promise<void>;
  close(): Promise<void>;
}

export async function createRunStage(): Promise<RunStage> {
  const llm = await startLocalLlmServer({ journalBodies: true });
  // Generous: test files run in parallel on 2 cores, and a neighbour's resource-limit test (a fork
  // bomb, a memory hog) can starve the dev server for seconds while this file starts.
  const connection = await Connection.connect({
    address: temporalAddress(),
    connectTimeout: "60 seconds",
    interceptors: clientInterceptors(),
  });
  const s3 = s3Client();
  const client = new Client({
    connection,
    namespace: temporalNamespace(),
    dataConverter: keelDataConverter(s3, s3Settings()),
  });
  const taskQueue = uniqueName("runs");
  const workspaceRoot = mkdtempSync(join(testTmpDir(), "workspaces-"));
  const store = new SessionStore(s3, s3Settings());
  const workers: WorkerProcess[] = [];

  async function startWorker(extraEnv: Record<string, string> = {}): Promise<WorkerProcess> {
    // node itself with tsx as a loader (not the tsx wrapper), so a kill reaches the worker.
    const child = spawn(process.execPath, ["--import", "tsx", join(projectRoot, "src/worker/main.ts")], {
      cwd: projectRoot,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        KEEL_TEMPORAL_ADDRESS: temporalAddress(),
        KEEL_TEMPORAL_NAMESPACE: temporalNamespace(),
        KEEL_TASK_QUEUE: taskQueue,
        KEEL_WORKFLOW_BUNDLE: workflowBundlePath(),
        KEEL_WORKSPACE_ROOT: workspaceRoot,
        ...s3SettingsToEnv(s3Settings()),
        OPENAI_API_KEY: "local-key",
        OPENAI_BASE_URL: llm.openaiBaseURL,
        ANTHROPIC_API_KEY: "local-key",
        ANTHROPIC_BASE_URL: llm.anthropicBaseURL,
        // One-line models may name the local LLM server, as an operator lists a model server.
        KEEL_MODEL_URLS: llm.url,
        ...extraEnv,
      },
    });
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<void>((done) => child.once("exit", () => done()));
    const ownTaskQueue = await new Promise<string>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`worker did not start:\n${output}`)), 60_000);
      const check = () => {
        const line = output.split("\n").find((candidate) => candidate.includes('"worker started"'));
        if (line) {
          clearTimeout(timer);
          done(JSON.parse(line).ownTaskQueue as string);
        }
      };
      child.stdout?.on("data", check);
      child.once("exit", () => fail(new Error(`worker exited early:\n${output}`)));
    });
    const worker: WorkerProcess = {
      child,
      ownTaskQueue,
      output: () => output,
      async kill() {
        child.kill("SIGKILL");
        await exited;
      },
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        // A worker that does not finish shutting down is a defect to report, not a reason to hang
        // the suite until jest's own timeout: kill it and fail with what it printed.
        let timer: NodeJS.Timeout | undefined;
        const hung = new Promise<"hung">((done) => {
          timer = setTimeout(() => done("hung"), STOP_TIMEOUT_MS);
        });
        const outcome = await Promise.race([exited, hung]);
        clearTimeout(timer);
        if (outcome === "hung") {
          child.kill("SIGKILL");
          await exited;
          throw new Error(
            `worker did not stop within ${STOP_TIMEOUT_MS} ms of SIGTERM:\n${output.slice(-4000)}`,
          );
        }
      },
      exited: () => exited,
    };
    workers.push(worker);
    return worker;
  }

  const tenantId = uniqueName("tenant");
  return {
    llm,
    runs: new RunClient(client, taskQueue),
    client,
    store,
    taskQueue,
    workspaceRoot,
    tenantId,
    startWorker,
    settings: (overrides = {}) => ({
      ...DEFAULT_RUN_SETTINGS,
      model: "local-chat",
      // Crashed workers are detected in seconds, not the production default of 30 s.
      timeouts: { heartbeatMs: 4_000, toolScheduleToStartMs: 5_000 },
      ...overrides,
    }),
    newSession: () => ({ tenantId, sessionId: uniqueName("session") }),
    result: (ref) => client.workflow.getHandle(runWorkflowId(ref)).result() as Promise<RunResult>,
    async entries(ref) {
      const { entries } = await store.readEntries(ref);
      return entries.map((stored) => stored.entry);
    },
    async stopWorkers() {
      await Promise.all(workers.splice(0).map((worker) => worker.stop()));
    },
    async close() {
      await Promise.all(workers.map((worker) => worker.stop()));
      await connection.close();
      s3.destroy();
      await llm.close();
    },
  };
}

/**
 * The stored session is whole and closed: every seq from 0 is present once, ids are unique,
 * parents point backwards, and the message invariants hold (every tool call answered once, right
 * after its call; no adjacent user messages; no empty assistant message). Returns the entries.
 */
export async function expectIntactSession(
  stage: RunStage,
  ref: { tenantId: string; sessionId: string },
): Promise<SessionEntry[]> {
  const { entries, gaps, nextSeq } = await stage.store.readEntries(ref);
  expect(gaps).toEqual([]);
  expect(entries.map((stored) => stored.seq)).toEqual([...Array(nextSeq).keys()]);
  const ids = entries.map((stored) => stored.entry.id);
  expect(new Set(ids).size).toBe(ids.length);
  const seen = new Set<string>();
  for (const { entry } of entries) {
    if (entry.parentId !== null) expect(seen.has(entry.parentId)).toBe(true);
    seen.add(entry.id);
  }
  const list = entries.map((stored) => stored.entry);
  expect(checkInvariants(convertToLlm(messagesOf(list)))).toEqual([]);
  return list;
}

/** Messages of a session's entries, in order (for assertions). */
export function messagesOf(entries: SessionEntry[]) {
  return entries.flatMap((entry) => (entry.type === "message" ? [entry.message] : []));
}

/** The ids of the tool calls the assistant messages make, in order. */
export function toolCallIds(messages: ReturnType<typeof messagesOf>): string[] {
  return messages.flatMap((message) =>
    message.role === "assistant" ? message.content.flatMap((b) => (b.type === "toolCall" ? [b.id] : [])) : [],
  );
}

/** Polls `probe` until it returns a value other than undefined; fails after `timeoutMs`. */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * Resolves once the local LLM server has been called for `scenario` (for its turn `turn`, when
 * given): the run has reached that model call.
 */
export async function modelCalled(stage: RunStage, scenario: string, turn?: number): Promise<void> {
  await eventually(async () =>
    stage.llm
      .journal()
      .some((entry) => entry.scenario === scenario && (turn === undefined || entry.turn === turn))
      ? true
      : undefined,
  );
}

/** Resolves with the run's state once one of its tool calls is running. */
export async function toolCallRunning(stage: RunStage, ref: SessionRef): Promise<RunState> {
  return eventually(
    async () => {
      const state = await stage.runs.state(ref);
      return state?.pendingToolCalls.some((call) => call.state === "running") ? state : undefined;
    },
    30_000,
    "a running tool call",
  );
}

/** A scenario answering every request with "You said: <last user message>", each reply slowed by `latencyMs`. */
export function slowEchoScenario(stage: RunStage, name: string, latencyMs: number): void {
  stage.llm.addScenario(name, { turns: [], after: { text: "You said: {{lastUser}}" } });
  stage.llm.addFaults([{ kind: "slow", match: { scenario: name }, rate: 1, latencyMs }]);
}

/**
 * A run stage for one test file: created before its tests, closed after. By default one worker
 * serves the whole file (started with `workerEnv`); with `workersPerTest` each test starts the workers it needs (to kill them,
 * or to give them other settings) and every worker is stopped after each test.
 */
export function runStageForSuite(
  options: { workersPerTest?: boolean; workerEnv?: Record<string, string> } = {},
): () => RunStage {
  let stage: RunStage | undefined;
  beforeAll(async () => {
    stage = await createRunStage();
    if (!options.workersPerTest) await stage.startWorker(options.workerEnv);
  });
  if (options.workersPerTest) {
    afterEach(async () => {
      await stage?.stopWorkers();
    });
  }
  afterAll(async () => {
    await stage?.close();
  });
  return () => {
    if (!stage) throw new Error("the run stage is created in beforeAll");
    return stage;
  };
}
