/**
 * Keel's own processes on the cluster: the local LLM server (the model, answering with a hosted
 * model's latency), two API processes behind nginx (one address, least-connections, a refused
 * connection passed to the other), three workers each on its own workspace root (as on three
 * machines) and two `keel runner` processes of one runner environment. Started as `keel dev`
 * starts its worker and runner (src/cli/devstack/worker-process.ts), through tsx.
 */
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ApiClient, ApiError } from "../../src/api-client/client";
import { type ServiceProcess, startServiceProcess } from "../../src/cli/devstack/service-process";
import { projectRoot } from "../../src/cli/devstack/tools";
import { devVaultEnv } from "../../src/cli/devstack/vault-key";
import { runnerProcess, startWorkerProcess } from "../../src/cli/devstack/worker-process";
import { writeWorkflowBundle } from "../../src/cli/devstack/workflow-bundle";
import { s3SettingsToEnv } from "../../src/store/s3-config";
import {
  API_PORTS,
  API_PROXY_PORT,
  clusterDir,
  LLM_LATENCY_MS,
  LLM_PORT,
  LLM_TOKENS_PER_SECOND,
  RUNNER_COUNT,
  RUNNER_ENVIRONMENT,
  TASK_QUEUE,
  TEMPORAL_ADDRESS,
  TEMPORAL_NAMESPACE,
  TENANT_KEYS,
  WORKER_COUNT,
} from "./layout";
import { type ClusterPart, httpOk, startPart, waitUntil } from "./parts";
import { clusterS3Settings } from "./seaweedfs";

const keelDir = join(clusterDir, "keel");
const START_TIMEOUT_MS = 120_000;
export const apiUrl = `http://127.0.0.1:${API_PROXY_PORT}`;
export const llmUrl = `http://127.0.0.1:${LLM_PORT}`;
/** The local LLM server takes any key. */
const LOCAL_LLM_KEY = "local";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

export interface KeelOptions {
  /**
   * Where the API and the workers send S3 requests (default: the S3 gateway): a benchmark puts a
   * request-counting proxy in front of it.
   */
  s3Endpoint?: string;
  /**
   * The model answers at once and as fast as it can (default: after LLM_LATENCY_MS, at
   * LLM_TOKENS_PER_SECOND): a benchmark paces some scenarios itself (the LLM server's `slow` fault).
   */
  llmUnpaced?: boolean;
}

/** Where Temporal and S3 are, for the API and the workers alike. */
function serverEnv(options: KeelOptions): Record<string, string> {
  return {
    KEEL_TEMPORAL_ADDRESS: TEMPORAL_ADDRESS,
    KEEL_TEMPORAL_NAMESPACE: TEMPORAL_NAMESPACE,
    KEEL_TASK_QUEUE: TASK_QUEUE,
    ...s3SettingsToEnv({ ...clusterS3Settings, endpoint: options.s3Endpoint ?? clusterS3Settings.endpoint }),
    // One tenant-secrets key for every API and worker process (made once in the data folder).
    ...devVaultEnv({}, keelDir),
  };
}

/** A node process running a TypeScript entry point through tsx, healthy once `healthUrl` answers. */
async function startNodeService(
  name: string,
  args: string[],
  env: Record<string, string>,
  healthUrl: string,
): Promise<ServiceProcess> {
  const process = startServiceProcess(name, globalThis.process.execPath, ["--import", "tsx", ...args], {
    logFile: join(keelDir, `${name}.log`),
    cwd: projectRoot,
    env: { PATH: globalThis.process.env.PATH, HOME: globalThis.process.env.HOME, ...env },
  });
  try {
    await waitUntil(name, () => httpOk(healthUrl), { timeoutMs: START_TIMEOUT_MS, isAlive: process.isAlive });
  } catch (error) {
    await process.stop();
    throw new Error(`${(error as Error).message}; see ${process.logFile}`);
  }
  return process;
}

function startLlm(options: KeelOptions): Promise<ClusterPart> {
  const pacing = options.llmUnpaced
    ? []
    : ["--latency-ms", String(LLM_LATENCY_MS), "--tokens-per-second", String(LLM_TOKENS_PER_SECOND)];
  return startPart("llm", "llm", () =>
    startNodeService(
      "llm",
      [join(projectRoot, "src/providers/local-server/main.ts"), "--port", String(LLM_PORT), ...pacing],
      {},
      `${llmUrl}/_health`,
    ),
  );
}

function startApi(port: number, index: number, options: KeelOptions): Promise<ClusterPart> {
  const env = {
    ...serverEnv(options),
    KEEL_DEFAULT_MODEL: "local-chat",
    KEEL_API_PORT: String(port),
    KEEL_API_PUBLIC_URL: apiUrl,
    OPENAI_BASE_URL: `${llmUrl}/v1`,
    KEEL_API_KEYS: JSON.stringify(
      Object.fromEntries(Object.entries(TENANT_KEYS).map(([tenant, key]) => [sha256(key), tenant])),
    ),
  };
  const name = `api-${index + 1}`;
  return startPart(name, "api", () =>
    startNodeService(name, [join(projectRoot, "src/api/server.ts")], env, `http://127.0.0.1:${port}/healthz`),
  );
}

/** nginx in the foreground, every file it writes under the data folder. */
function nginxConfig(dir: string): string {
  return `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream keel_api {
    least_conn;
${API_PORTS.map((port) => `    server 127.0.0.1:${port} max_fails=1 fail_timeout=2s;`).join("\n")}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${API_PROXY_PORT};
    client_max_body_size 64m;
    location / {
      proxy_pass http://keel_api;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      # Event streams (SSE) and uploads pass through as they come.
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 1h;
      proxy_connect_timeout 1s;
      # A refused connection never reached an API process: the other one gets the request.
      proxy_next_upstream error timeout;
    }
  }
}
`;
}

function startNginx(): Promise<ClusterPart> {
  const dir = join(clusterDir, "nginx");
  mkdirSync(dir, { recursive: true });
  const config = join(dir, "nginx.conf");
  writeFileSync(config, nginxConfig(dir));
  return startPart("nginx", "nginx", async () => {
    const process = startServiceProcess(
      "nginx",
      "nginx",
      ["-p", dir, "-c", config, "-e", join(dir, "error.log")],
      {
        logFile: join(dir, "nginx.log"),
      },
    );
    await waitUntil("nginx", () => httpOk(`${apiUrl}/healthz`), {
      timeoutMs: 30_000,
      isAlive: process.isAlive,
    });
    return process;
  });
}

function startKeelWorker(index: number, bundlePath: string, options: KeelOptions): Promise<ClusterPart> {
  const name = `worker-${index + 1}`;
  const workspaceRoot = join(keelDir, `workspaces-${index + 1}`);
  mkdirSync(workspaceRoot, { recursive: true });
  return startPart(name, "keel-worker", () =>
    startWorkerProcess({
      logFile: join(keelDir, `${name}.log`),
      env: {
        ...serverEnv(options),
        KEEL_WORKFLOW_BUNDLE: bundlePath,
        KEEL_WORKSPACE_ROOT: workspaceRoot,
        OPENAI_API_KEY: LOCAL_LLM_KEY,
        OPENAI_BASE_URL: `${llmUrl}/v1`,
      },
    }),
  );
}

/** The runner environment of tenant `runners` (created once) and a new token for it. */
async function issueRunnerToken(): Promise<string> {
  const client = new ApiClient({ baseUrl: apiUrl, apiKey: TENANT_KEYS.runners });
  const environments = client.api.v1.environments;
  try {
    await client.json(environments.$post({ json: { name: RUNNER_ENVIRONMENT, kind: "runner" } }));
  } catch (error) {
    if (!(error instanceof ApiError && error.slug === "environment-exists")) throw error;
  }
  const issued = await client.json(
    environments[":name"].tokens.$post({ param: { name: RUNNER_ENVIRONMENT } }),
  );
  return issued.token;
}

async function startRunner(index: number): Promise<ClusterPart> {
  const name = `runner-${index + 1}`;
  const token = await issueRunnerToken();
  return startPart(name, "runner", () =>
    startWorkerProcess({
      logFile: join(keelDir, `${name}.log`),
      env: { KEEL_API_URL: apiUrl, KEEL_RUNNER_TOKEN: token },
      kind: runnerProcess(RUNNER_ENVIRONMENT, ["--workspace-root", join(keelDir, name)]),
    }),
  );
}

/** The model, APIs, nginx, workers and runners, in that order (each checked before the next). */
export async function startKeel(options: KeelOptions = {}): Promise<ClusterPart[]> {
  mkdirSync(keelDir, { recursive: true });
  const parts: ClusterPart[] = [];
  try {
    const bundle = writeWorkflowBundle(join(keelDir, "workflow-bundle.js"));
    parts.push(await startLlm(options));
    for (const [index, port] of API_PORTS.entries()) parts.push(await startApi(port, index, options));
    parts.push(await startNginx());
    const bundlePath = await bundle;
    for (let index = 0; index < WORKER_COUNT; index++)
      parts.push(await startKeelWorker(index, bundlePath, options));
    for (let index = 0; index < RUNNER_COUNT; index++) parts.push(await startRunner(index));
  } catch (error) {
    await Promise.all(parts.map((part) => part.current().stop()));
    throw error;
  }
  return parts;
}
