/**
 * The chaos stage: one dev stack on temporary data folders — the Temporal dev server on a SQLite
 * database (so it can be restarted on it), SeaweedFS, the local LLM server (in this process), the
 * HTTP API and Keel workers as their own processes (so they can be SIGKILLed, and an API server
 * that crashes is noticed and started again), each worker on its own disk (workspace root), so
 * workspaces move between disks as between machines. Servers are
 * started by src/cli/devstack, as `keel dev` starts them.
 */

import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort, waitForPort } from "../../src/cli/devstack/ports";
import { type S3DevServer, startS3DevServer } from "../../src/cli/devstack/s3-server";
import { type ServiceProcess, startServiceProcess } from "../../src/cli/devstack/service-process";
import { startTemporalDevServer, type TemporalDevServer } from "../../src/cli/devstack/temporal-server";
import { projectRoot } from "../../src/cli/devstack/tools";
import { startWorkerProcess } from "../../src/cli/devstack/worker-process";
import { writeWorkflowBundle } from "../../src/cli/devstack/workflow-bundle";
import { type LocalLlmServer, startLocalLlmServer } from "../../src/providers/local-server";
import { createS3Client, s3SettingsToEnv } from "../../src/store/s3-config";
import { SessionStore } from "../../src/store/session-store";
import { WorkspaceSnapshots } from "../../src/store/workspace-snapshots";
import { MCP_WORKER_ENV } from "../support/mcp-servers";

export const CHAOS_TENANT = "chaos";
/** A local-only key for the chaos tenant (the API listens on loopback only). */
const LOCAL_LLM_KEY = "local-key";
const API_START_TIMEOUT_MS = 60_000;
/** Lines of the API's log kept when it exits on its own (its last words). */
const API_LOG_TAIL_LINES = 15;
/** A stopped second worker drains in-flight activities this long, then they are cancelled. */
const SECONDARY_SHUTDOWN_GRACE_SECONDS = 5;

export type WorkerRole = "primary" | "secondary";

/** What differs between the suites that use this stage (the chaos suite takes the defaults). */
export interface StackOptions {
  /** Names the temporary folder, the bucket and the task queue (default "chaos"). */
  name?: string;
  /** Tenants that get an API key each (default: the chaos tenant alone). */
  tenants?: readonly string[];
  /**
   * Variables given to the API server and every worker before the stack's own (which win):
   * an operator's settings, e.g. the `KEEL_*` variables of the caller's environment.
   */
  env?: Record<string, string>;
  /** Variables given to every worker after the stack's own (they win): keys, base URLs. */
  workerEnv?: Record<string, string>;
}

export interface ChaosStack {
  dir: string;
  /** The workflow bundle every worker of the stack runs (histories are replayed on it). */
  workflowBundlePath: string;
  llm: LocalLlmServer;
  store: SessionStore;
  apiUrl: string;
  /** The key of the first tenant (the chaos tenant by default). */
  apiKey: string;
  /** Every tenant's key. */
  apiKeys: Record<string, string>;
  /**
   * Each worker role's own disk: `<root>/<tenant>/<session>`. Two disks, as in a deployment of
   * several machines: a workspace moves between them through its snapshots, and the disk whose
   * holder epoch is stored has the current copy.
   */
  workspaceRoots: Record<WorkerRole, string>;
  /** The sessions' workspace snapshots and holder epochs (which disk holds each workspace). */
  snapshots: WorkspaceSnapshots;
  /** True while the API server process runs. */
  apiAlive(): boolean;
  /** Starts the API server again on its port (after it exited); resolves with its log's last lines. */
  restartApi(): Promise<string>;
  /** SIGKILLs the API server process (its process group); `restartApi` starts it again. */
  killApi(): Promise<void>;
  temporal(): TemporalDevServer;
  s3(): S3DevServer;
  /** Starts a worker in `role`'s slot (which must be empty). */
  startWorker(role: WorkerRole): Promise<void>;
  /** The worker in `role`'s slot, when it is alive. */
  worker(role: WorkerRole): ServiceProcess | undefined;
  /** SIGKILLs `role`'s worker and empties its slot. */
  killWorker(role: WorkerRole): Promise<void>;
  /** SIGTERMs `role`'s worker (it drains briefly) and empties its slot. */
  stopWorker(role: WorkerRole): Promise<void>;
  restartTemporal(): Promise<void>;
  /** Stops the S3 server, waits `downMs`, starts it again on the same data folder and ports. */
  s3Outage(downMs: number): Promise<void>;
  close(options: { keepData: boolean }): Promise<void>;
}

export async function startChaosStack(options: StackOptions = {}): Promise<ChaosStack> {
  const name = options.name ?? "chaos";
  const tenants = options.tenants ?? [CHAOS_TENANT];
  const dir = mkdtempSync(join(tmpdir(), `keel-${name}-`));
  const temporalDir = join(dir, "temporal");
  const s3Dir = join(dir, "s3");
  const workspaceRoots: Record<WorkerRole, string> = {
    primary: join(dir, "workspaces-primary"),
    secondary: join(dir, "workspaces-secondary"),
  };
  for (const folder of [temporalDir, s3Dir, ...Object.values(workspaceRoots)]) mkdirSync(folder);

  const [initialTemporal, initialS3, bundlePath, llm] = await Promise.all([
    startTemporalDevServer({ dataDir: temporalDir, persist: true }),
    startS3DevServer({ dataDir: s3Dir, bucket: `keel-${name}` }),
    writeWorkflowBundle(join(dir, "workflow-bundle.js")),
    startLocalLlmServer(),
  ]);
  let temporal = initialTemporal;
  let s3 = initialS3;
  const s3Client = createS3Client(s3.settings);
  const store = new SessionStore(s3Client, s3.settings);
  const snapshots = new WorkspaceSnapshots(s3Client, s3.settings);

  const commonEnv = {
    ...options.env,
    KEEL_TEMPORAL_ADDRESS: temporal.address,
    KEEL_TEMPORAL_NAMESPACE: temporal.namespace,
    KEEL_TASK_QUEUE: `keel-${name}`,
    ...s3SettingsToEnv(s3.settings),
  };

  const apiKeys = Object.fromEntries(
    tenants.map((tenant) => [tenant, `${name}-${randomBytes(12).toString("hex")}`]),
  );
  const apiPort = await freePort();
  const apiLog = join(dir, "api.log");
  const startApi = async () => {
    const server = startServiceProcess(
      "api",
      process.execPath,
      ["--import", "tsx", join(projectRoot, "src/api/server.ts")],
      {
        logFile: apiLog,
        cwd: projectRoot,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          ...commonEnv,
          KEEL_DEFAULT_MODEL: "local-chat",
          KEEL_API_PORT: String(apiPort),
          KEEL_API_KEYS: JSON.stringify(
            Object.fromEntries(
              Object.entries(apiKeys).map(([tenant, key]) => [
                createHash("sha256").update(key).digest("hex"),
                tenant,
              ]),
            ),
          ),
        },
      },
    );
    await waitForPort(apiPort, API_START_TIMEOUT_MS, server.isAlive);
    return server;
  };
  let api = await startApi();

  const workers: Record<WorkerRole, ServiceProcess | undefined> = {
    primary: undefined,
    secondary: undefined,
  };
  const workerEnv = (role: WorkerRole) => ({
    ...commonEnv,
    KEEL_WORKFLOW_BUNDLE: bundlePath,
    KEEL_WORKSPACE_ROOT: workspaceRoots[role],
    OPENAI_API_KEY: LOCAL_LLM_KEY,
    OPENAI_BASE_URL: llm.openaiBaseURL,
    // Where the scenario's MCP server lives (read-only inside the sandbox).
    ...MCP_WORKER_ENV,
    // No idle eviction: the verifier reads each session's current copy from its disk.
    KEEL_WORKSPACE_IDLE_EVICT_SECONDS: "0",
    ...(role === "secondary"
      ? { KEEL_SHUTDOWN_GRACE_SECONDS: String(SECONDARY_SHUTDOWN_GRACE_SECONDS) }
      : {}),
    ...options.workerEnv,
  });
  const alive = (role: WorkerRole) => {
    const worker = workers[role];
    return worker?.isAlive() ? worker : undefined;
  };

  return {
    dir,
    workflowBundlePath: bundlePath,
    llm,
    store,
    apiUrl: `http://127.0.0.1:${apiPort}`,
    apiKey: apiKeys[tenants[0] ?? CHAOS_TENANT] as string,
    apiKeys,
    workspaceRoots,
    snapshots,
    apiAlive: () => api.isAlive(),
    async restartApi() {
      const tail = readFileSync(apiLog, "utf8").split("\n").slice(-API_LOG_TAIL_LINES).join("\n");
      api = await startApi();
      return tail;
    },
    killApi: () => api.kill(),
    temporal: () => temporal,
    s3: () => s3,
    async startWorker(role) {
      if (alive(role)) throw new Error(`the ${role} worker is already running`);
      workers[role] = await startWorkerProcess({
        logFile: join(dir, `worker-${role}.log`),
        env: workerEnv(role),
      });
    },
    worker: alive,
    async killWorker(role) {
      await workers[role]?.kill();
      workers[role] = undefined;
    },
    async stopWorker(role) {
      await workers[role]?.stop((SECONDARY_SHUTDOWN_GRACE_SECONDS + 5) * 1000);
      workers[role] = undefined;
    },
    async restartTemporal() {
      await temporal.process.stop();
      // Clients need the same gRPC port; the UI port is picked again: while the server was down,
      // another process may have been given the old one (a restart once died on "address
      // already in use" for it).
      temporal = await startTemporalDevServer({
        dataDir: temporalDir,
        persist: true,
        port: temporal.ports.grpc,
        namespace: temporal.namespace,
      });
    },
    async s3Outage(downMs) {
      await s3.process.stop();
      await sleep(downMs);
      s3 = await startS3DevServer({ dataDir: s3Dir, bucket: `keel-${name}`, ports: s3.ports });
    },
    async close({ keepData }) {
      await Promise.all([
        ...(["primary", "secondary"] as const).map((role) => workers[role]?.stop(2_000)),
        api.stop(),
      ]);
      await llm.close();
      s3Client.destroy();
      await Promise.all([temporal.process.stop(), s3.process.stop()]);
      if (!keepData) rmSync(dir, { recursive: true, force: true });
    },
  };
}
