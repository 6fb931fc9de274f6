/**
 * Runner environments through the real stack: the API served over HTTP (as a runner reaches it),
 * Temporal, S3, a worker process, and `keel runner` processes a test can SIGKILL.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join, resolve } from "node:path";
import type { ServerType } from "@hono/node-server";
import type { ApiDependencies } from "../../../src/api/route-context";
import { startApiServer } from "../../../src/api/server";
import { EnvironmentStore } from "../../../src/environments/store";
import { McpToolListings } from "../../../src/store/mcp-tool-listings";
import { ToolCallMarkers } from "../../../src/store/tool-call-markers";
import { s3Client, s3Settings, testTmpDir, uniqueName } from "../../support/integration-env";
import { type ApiStage, createApiStage } from "../api/api-stage";

const projectRoot = resolve(__dirname, "../../..");

export interface RunnerProcess {
  child: ChildProcess;
  output(): string;
  kill(): Promise<void>;
  exited: Promise<number | null>;
}

export interface RunnerStage {
  api: ApiStage;
  apiUrl: string;
  /** Starts `keel runner --env environment` with the token (and `env` added to its environment). */
  startRunner(
    environment: string,
    token: string,
    extra?: string[],
    env?: Record<string, string>,
  ): RunnerProcess;
  /** A new runner environment of a tenant (default A) with one token. */
  newEnvironment(key?: string): Promise<{ name: string; token: string; tokenId: string }>;
  /** SIGKILLs every runner started so far. */
  killRunners(): Promise<void>;
  close(): Promise<void>;
}

export async function createRunnerStage(
  options: { overrides?: Partial<ApiDependencies> } = {},
): Promise<RunnerStage> {
  const settings = s3Settings();
  const s3 = s3Client();
  const api = await createApiStage({
    overrides: {
      ...options.overrides,
      environments: {
        store: new EnvironmentStore(s3, settings.bucket, settings.prefix),
        markers: new ToolCallMarkers(s3, settings),
        mcpListings: new McpToolListings(s3, settings),
      },
    },
  });
  const started = await startApiServer(api.app, 0);
  const server: ServerType = started.server;
  const apiUrl = `http://127.0.0.1:${started.port}`;
  const runners: RunnerProcess[] = [];
  return {
    api,
    apiUrl,
    startRunner(environment, token, extra = [], env = {}) {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", join(projectRoot, "src/cli/main.ts"), "runner", "--env", environment, ...extra],
        {
          cwd: projectRoot,
          stdio: ["ignore", "pipe", "pipe"],
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            KEEL_API_URL: apiUrl,
            KEEL_RUNNER_TOKEN: token,
            ...env,
          },
        },
      );
      let output = "";
      const collect = (chunk: Buffer) => {
        output += chunk.toString();
      };
      child.stdout?.on("data", collect);
      child.stderr?.on("data", collect);
      const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
      const runner: RunnerProcess = {
        child,
        output: () => output,
        async kill() {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
          await exited;
        },
        exited,
      };
      runners.push(runner);
      return runner;
    },
    async newEnvironment(key = api.keys.a) {
      const name = uniqueName("env").slice(0, 60);
      expect((await api.call("POST", "/v1/environments", { key, json: { name } })).status).toBe(201);
      const issued = await api.call("POST", `/v1/environments/${name}/tokens`, { key });
      expect(issued.status).toBe(201);
      return { name, token: issued.body.token, tokenId: issued.body.tokenId };
    },
    async killRunners() {
      await Promise.all(runners.splice(0).map((runner) => runner.kill()));
    },
    async close() {
      await Promise.all(runners.splice(0).map((runner) => runner.kill()));
      await new Promise((done) => server.close(done));
      await api.close();
      s3.destroy();
    },
  };
}

/**
 * Registers a suite's hooks around one stage: created before all tests (handed to `ready`), its
 * runners killed and mocks restored after each test, everything closed after all.
 */
export function useRunnerStage(
  ready: (stage: RunnerStage) => void,
  options: Parameters<typeof createRunnerStage>[0] = {},
): void {
  let stage: RunnerStage | undefined;
  beforeAll(async () => {
    stage = await createRunnerStage(options);
    ready(stage);
  }, 240_000);
  afterEach(async () => {
    jest.restoreAllMocks();
    await stage?.killRunners();
  });
  afterAll(async () => {
    await stage?.close();
  });
}

/** A fresh directory for a runner's workspaces (or a checkout it acts on). */
export function workspaceRoot(): string {
  return mkdtempSync(join(testTmpDir(), "runner-"));
}

/** Pids of processes whose command line matches `pattern` (pgrep -f). */
export function processesMatching(pattern: string): string[] {
  try {
    return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" }).trim().split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

/** The runner's log lines that say it claimed a call. */
export function claims(runner: RunnerProcess): string[] {
  return runner
    .output()
    .split("\n")
    .filter((line) => line.includes('"call claimed"'));
}
