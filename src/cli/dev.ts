// Over 400 lines: one start sequence whose steps share the stop list, the stopping flag and the printed summary; each part it starts lives in devstack/.
/**
 * `keel dev`: the whole local stack in one command, then a demo run.
 *
 * Starts the Temporal dev server (web UI, state in `.keel/data/temporal`) and the S3 server,
 * the local LLM server when no provider key is set, a worker (child process) and the HTTP API
 * (in this process, with a fixed dev key for tenant `dev` and a fixed operator key); runs the
 * demo (see `demo.ts`) unless `--no-demo`; keeps everything up until Ctrl-C and then stops all of it. Existing servers are
 * used instead when KEEL_TEMPORAL_ADDRESS or KEEL_S3_ENDPOINT / KEEL_S3_BUCKET are set. With
 * `--runner` the tenant's tools run on a `keel runner` child process instead of the worker
 * (`devstack/dev-runner.ts`).
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { apiConfigFromEnv } from "../api/config";
import { createApiRuntime } from "../api/runtime";
import { startApiServer } from "../api/server";
import { ApiClient, EXIT, type ExitCode, UsageError } from "../api-client/client";
import { DEFAULT_TEMPORAL_NAMESPACE } from "../core/temporal-settings";
import {
  DEFAULT_SCENARIO,
  type LocalLlmServer,
  quickstartScenario,
  startLocalLlmServer,
} from "../providers/local-server";
import { loadCatalog } from "../providers/models";
import { type S3Settings, s3SettingsFromEnv, s3SettingsToEnv } from "../store/s3-config";
import { DEMO_TENANT, runDemo } from "./demo";
import {
  DEV_RUNNER_ENVIRONMENT,
  type DevRunner,
  setDevRunnerDefault,
  startDevRunner,
} from "./devstack/dev-runner";
import { ensureJaeger, type JaegerServer, jaegerNeedsBuild, startJaeger } from "./devstack/jaeger-server";
import { freePort, startOnFreePorts } from "./devstack/ports";
import { startS3DevServer } from "./devstack/s3-server";
import { startTemporalDevServer } from "./devstack/temporal-server";
import { projectRoot } from "./devstack/tools";
import { startTraceViewer, type TraceViewer } from "./devstack/trace-viewer";
import { devVaultEnv } from "./devstack/vault-key";
import { workerPassThrough } from "./devstack/worker-env";
import { startSupervisedWorker, WORKER_STOP_GRACE_MS } from "./devstack/worker-process";
import { writeWorkflowBundle } from "./devstack/workflow-bundle";
import { type Output, stdoutOutput } from "./output";

interface DevStack {
  temporal: { address: string; namespace: string; uiUrl?: string };
  s3: S3Settings;
  stop(): Promise<void>;
}

const DEFAULT_PORTS = {
  temporal: 7233,
  temporalUi: 8233,
  s3: 8333,
  api: 8787,
  llm: 8788,
  jaegerUi: 16686,
  traceViewer: 16687,
};

/** The local API key of `keel dev` (loopback only, tenant `dev`); not a secret. */
export const DEV_API_KEY = "keel-dev-key";
/** The operator's key of `keel dev`'s admin API (`keel admin`; loopback only); not a secret. */
const DEV_ADMIN_KEY = "keel-dev-admin-key";
const DEV_TASK_QUEUE = "keel";

/** Each reply of the local LLM server waits this long, so the demo can be steered mid-run. */
const DEMO_LLM_LATENCY_MS = 700;
/** The local LLM server writes its replies at about this pace, so the demo's answer visibly streams. */
const DEMO_LLM_TOKENS_PER_SECOND = 30;

/** Models used with a real provider key, first match wins. */
const REAL_PROVIDER_MODELS = [
  { envKey: "OPENAI_API_KEY", model: "gpt-4.1-mini" },
  { envKey: "ANTHROPIC_API_KEY", model: "claude-sonnet-4-5" },
] as const;
const LOCAL_MODEL = "local-chat";

export const devUsage = `Usage: keel dev [--no-demo] [--model M] [--traces] [--runner]

Runs the local stack (Temporal dev server + UI, S3 server, local LLM server when no
OPENAI_API_KEY / ANTHROPIC_API_KEY is set, worker, HTTP API), then a demo run in a copy of
examples/sample-project. Ctrl-C stops everything. KEEL_DATA_DIR moves the state folder
(default .keel/data).

--traces also starts Jaeger (built from Go sources the first time: several minutes) and sends
the API's and the worker's traces and metrics to it, and a trace viewer (each run's trace as a
waterfall) whose address is printed beside the Temporal UI's. Without it, KEEL_OTEL_ENDPOINT
(when set) is passed on to the API and the worker.

Worker settings set here (KEEL_MCP_MOUNTS, KEEL_MCP_HOSTS, KEEL_SANDBOX_*, every
variable the worker reads, and the variables they name) are passed on to the worker; the summary's
"worker env" line names them. The API's operator key (keel admin) is ${DEV_ADMIN_KEY}.

--runner also starts \`keel runner --env ${DEV_RUNNER_ENVIRONMENT}\` (restarted when it dies) and makes
that environment the tenant's default, so tools run there, not on the worker: the runner holds
only the API's URL and a runner token (new each start, the previous one revoked), nothing of the
worker's S3, Temporal or provider settings. Its workspaces are in the state folder's
runner/${DEV_RUNNER_ENVIRONMENT}/<session>. Without --runner the default is removed again.
`;

/** The preferred port when it is free, another free port otherwise. */
async function portOr(preferred: number): Promise<number> {
  const { createServer } = await import("node:net");
  const free = await new Promise<boolean>((done) => {
    const server = createServer();
    server.once("error", () => done(false));
    server.listen(preferred, "127.0.0.1", () => server.close(() => done(true)));
  });
  return free ? preferred : freePort();
}

/**
 * The port the local LLM server had the last time the stack ran on this data folder, so its URL
 * (where a person or a script registered scenarios with `POST /_scenarios`) stays the same across
 * restarts when the port is free; the default port the first time.
 */
function rememberedPort(file: string, fallback: number): number {
  try {
    const port = Number(readFileSync(file, "utf8").trim());
    return Number.isInteger(port) && port > 0 && port < 65_536 ? port : fallback;
  } catch {
    return fallback;
  }
}

/** Temporal and S3: started side by side (or the configured existing ones). */
async function startDevStack(env: NodeJS.ProcessEnv): Promise<DevStack> {
  const dataDir = env.KEEL_DATA_DIR ?? join(projectRoot, ".keel/data");
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    await Promise.all(stops.splice(0).map((fn) => fn()));
  };
  const startTemporal = async (): Promise<DevStack["temporal"]> => {
    if (env.KEEL_TEMPORAL_ADDRESS) {
      return {
        address: env.KEEL_TEMPORAL_ADDRESS,
        namespace: env.KEEL_TEMPORAL_NAMESPACE ?? DEFAULT_TEMPORAL_NAMESPACE,
      };
    }
    const temporalDir = join(dataDir, "temporal");
    mkdirSync(temporalDir, { recursive: true });
    // The default ports are preferences: another stack can take one between the check and the
    // bind (two `keel dev` starting at once), and the start is tried again on other ports.
    const server = await startOnFreePorts(false, async () =>
      startTemporalDevServer({
        dataDir: temporalDir,
        persist: true,
        port: await portOr(DEFAULT_PORTS.temporal),
        uiPort: await portOr(DEFAULT_PORTS.temporalUi),
        namespace: env.KEEL_TEMPORAL_NAMESPACE ?? DEFAULT_TEMPORAL_NAMESPACE,
      }),
    );
    stops.push(() => server.process.stop());
    return { address: server.address, namespace: server.namespace, uiUrl: server.uiUrl };
  };
  const startS3 = async (): Promise<S3Settings> => {
    if (env.KEEL_S3_ENDPOINT || env.KEEL_S3_BUCKET) return s3SettingsFromEnv(env);
    const s3Dir = join(dataDir, "s3");
    mkdirSync(s3Dir, { recursive: true });
    const server = await startOnFreePorts(false, async () =>
      startS3DevServer({ dataDir: s3Dir, bucket: "keel", port: await portOr(DEFAULT_PORTS.s3) }),
    );
    stops.push(() => server.process.stop());
    return server.settings;
  };
  const [temporal, s3] = await Promise.allSettled([startTemporal(), startS3()]);
  if (temporal.status === "rejected" || s3.status === "rejected") {
    await stop();
    throw temporal.status === "rejected" ? temporal.reason : (s3 as PromiseRejectedResult).reason;
  }
  return { temporal: temporal.value, s3: s3.value, stop };
}

/** Which model the stack uses: a real provider's when its key is set, else the local server's. */
function chooseModel(env: NodeJS.ProcessEnv, requested?: string): { model: string; local: boolean } {
  const real = REAL_PROVIDER_MODELS.find(({ envKey }) => env[envKey]);
  if (requested) {
    const catalog = loadCatalog();
    const info = catalog.find(requested);
    if (!info) throw new UsageError(catalog.unknownModelMessage(requested));
    return { model: requested, local: info.provider === "local" };
  }
  return real ? { model: real.model, local: false } : { model: LOCAL_MODEL, local: true };
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Resolves on the first SIGINT / SIGTERM. */
function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    // The servers are detached; this timer is what keeps the process (and so the stack) alive.
    const keepAlive = setInterval(() => {}, 60_000);
    const onSignal = (signal: NodeJS.Signals) => {
      clearInterval(keepAlive);
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      resolve(signal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}

/** Prints "label …" then "ok (1.2s)" around `step`. */
async function step<T>(out: Output, label: string, action: () => Promise<T>): Promise<T> {
  const started = Date.now();
  out.write(`• ${label} … `);
  try {
    const value = await action();
    out.write(`ok (${((Date.now() - started) / 1000).toFixed(1)}s)\n`);
    return value;
  } catch (error) {
    out.write("failed\n");
    throw error;
  }
}

/**
 * Runs the local stack in the foreground until SIGINT / SIGTERM. `env`: the caller's environment
 * (DEV_ENV's variables, and the worker settings it passes on).
 */
export async function runDev(
  argv: string[],
  env: NodeJS.ProcessEnv,
  out: Output = stdoutOutput,
): Promise<ExitCode> {
  let values: { "no-demo"?: boolean; model?: string; traces?: boolean; runner?: boolean };
  try {
    values = parseArgs({
      args: argv,
      options: {
        "no-demo": { type: "boolean" },
        model: { type: "string" },
        traces: { type: "boolean" },
        runner: { type: "boolean" },
      },
      strict: true,
    }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { model, local } = chooseModel(env, values.model);
  const dataDir = env.KEEL_DATA_DIR ?? join(projectRoot, ".keel/data");
  mkdirSync(dataDir, { recursive: true });
  const signal = stopSignal();
  let stopping = false;
  void signal.then(() => {
    stopping = true;
  });

  // Stopped in reverse order of start: the worker before the servers it talks to.
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  };

  try {
    let jaeger: JaegerServer | undefined;
    let traceViewer: TraceViewer | undefined;
    if (values.traces) {
      const jaegerDir = join(dataDir, "jaeger");
      mkdirSync(jaegerDir, { recursive: true });
      if (jaegerNeedsBuild(env))
        await step(
          out,
          "building Jaeger from the Go module proxy (the first --traces only: several minutes)",
          () => ensureJaeger(env),
        );
      const uiPort = await portOr(DEFAULT_PORTS.jaegerUi);
      jaeger = await step(out, "Jaeger (traces and metrics)", () =>
        startJaeger({ dataDir: jaegerDir, uiPort }),
      );
      const server = jaeger;
      stops.push(() => server.process.stop());
      const viewerPort = await portOr(DEFAULT_PORTS.traceViewer);
      const viewer = await startTraceViewer({ jaegerUrl: server.uiUrl, port: viewerPort });
      traceViewer = viewer;
      stops.push(() => viewer.close());
    }
    // Telemetry of the API (in this process) and the worker: Jaeger's, or the operator's receiver.
    const otelEndpoint = jaeger?.otlpEndpoint ?? env.KEEL_OTEL_ENDPOINT;
    const telemetryEnv: Record<string, string | undefined> = otelEndpoint
      ? { KEEL_OTEL_ENDPOINT: otelEndpoint, KEEL_OTEL_CAPTURE_CONTENT: env.KEEL_OTEL_CAPTURE_CONTENT }
      : {};
    const [stack, bundlePath] = await step(
      out,
      "Temporal dev server + web UI, S3 server, workflow bundle",
      async () => {
        const bundle = writeWorkflowBundle(join(dataDir, "workflow-bundle.js"), {
          traced: Boolean(otelEndpoint),
        });
        const servers = await startDevStack(env);
        stops.push(() => servers.stop());
        return [servers, await bundle] as const;
      },
    );

    let llm: LocalLlmServer | undefined;
    if (local) {
      const llmPortFile = join(dataDir, "llm-port");
      const llmPort = await portOr(rememberedPort(llmPortFile, DEFAULT_PORTS.llm));
      llm = await step(out, "local LLM server (no provider key set)", () =>
        startLocalLlmServer({
          port: llmPort,
          latencyMs: DEMO_LLM_LATENCY_MS,
          tokensPerSecond: DEMO_LLM_TOKENS_PER_SECOND,
          // A prompt without a [scenario:x] tag gets a small piece of visible work.
          scenarios: { [DEFAULT_SCENARIO]: quickstartScenario },
        }),
      );
      const server = llm;
      stops.push(() => server.close());
      writeFileSync(llmPortFile, String(new URL(server.url).port));
    }

    // Where one-line models and git sources may point, for the worker and the API alike: the
    // local LLM server is listed as an operator would list a model server of their own.
    const outboundEnv: Record<string, string | undefined> = {
      KEEL_MODEL_URLS: llm ? [llm.url, env.KEEL_MODEL_URLS].filter(Boolean).join(",") : env.KEEL_MODEL_URLS,
      KEEL_GIT_HOSTS: env.KEEL_GIT_HOSTS,
    };
    const providerEnv: Record<string, string | undefined> = llm
      ? {
          OPENAI_API_KEY: "local",
          OPENAI_BASE_URL: llm.openaiBaseURL,
          ANTHROPIC_API_KEY: "local",
          ANTHROPIC_BASE_URL: llm.anthropicBaseURL,
        }
      : {
          OPENAI_API_KEY: env.OPENAI_API_KEY,
          OPENAI_BASE_URL: env.OPENAI_BASE_URL,
          ANTHROPIC_API_KEY: env.ANTHROPIC_API_KEY,
          ANTHROPIC_BASE_URL: env.ANTHROPIC_BASE_URL,
        };
    const providerUrls = {
      OPENAI_BASE_URL: providerEnv.OPENAI_BASE_URL,
      ANTHROPIC_BASE_URL: providerEnv.ANTHROPIC_BASE_URL,
    };
    const workspaceRoot = env.KEEL_WORKSPACE_ROOT ?? join(dataDir, "workspaces");
    const serverEnv = {
      KEEL_TEMPORAL_ADDRESS: stack.temporal.address,
      KEEL_TEMPORAL_NAMESPACE: stack.temporal.namespace,
      KEEL_TASK_QUEUE: env.KEEL_TASK_QUEUE ?? DEV_TASK_QUEUE,
      ...s3SettingsToEnv(stack.s3),
    };
    // Tenant secrets' key: the caller's vault setting, else a key file made once in the data folder.
    const vaultEnv = devVaultEnv(env, dataDir);
    const workerLog = join(dataDir, "worker.log");
    // The caller's worker settings (KEEL_MCP_MOUNTS, KEEL_SANDBOX_*, …) first: the stack's own win.
    const passedOn = workerPassThrough(env);
    const worker = await step(out, "worker", () =>
      startSupervisedWorker(
        {
          logFile: workerLog,
          env: {
            ...passedOn.env,
            ...serverEnv,
            ...providerEnv,
            ...outboundEnv,
            KEEL_WORKFLOW_BUNDLE: bundlePath,
            KEEL_WORKSPACE_ROOT: workspaceRoot,
            KEEL_MODELS_FILE: env.KEEL_MODELS_FILE,
            ...telemetryEnv,
            ...vaultEnv,
          },
        },
        (line) => {
          if (!stopping) out.write(`keel dev: ${line}\n`);
        },
      ),
    );
    stops.push(() => worker.stop(WORKER_STOP_GRACE_MS));

    const apiPort = await portOr(Number(env.KEEL_API_PORT) || DEFAULT_PORTS.api);
    const api = await step(out, "HTTP API", async () => {
      const config = apiConfigFromEnv({
        ...serverEnv,
        ...outboundEnv,
        // The base URLs only (no keys): one-line models may name them, as on the worker.
        ...providerUrls,
        // The API checks runs' MCP servers against the same hosts as the worker.
        KEEL_MCP_HOSTS: env.KEEL_MCP_HOSTS,
        KEEL_API_KEYS: JSON.stringify({ [sha256(DEV_API_KEY)]: DEMO_TENANT }),
        KEEL_ADMIN_KEY_SHA256: sha256(DEV_ADMIN_KEY),
        KEEL_API_ALLOW_DIRECTORY_WORKSPACES: "true",
        // `keel run` without --model uses the stack's model (local or the real provider's).
        KEEL_DEFAULT_MODEL: model,
        KEEL_API_PORT: String(apiPort),
        // The session viewer links to the Temporal UI, and new runs link back to the viewer.
        ...(stack.temporal.uiUrl ? { KEEL_TEMPORAL_UI_URL: stack.temporal.uiUrl } : {}),
        KEEL_API_PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
        KEEL_MODELS_FILE: env.KEEL_MODELS_FILE,
        ...telemetryEnv,
        ...vaultEnv,
      });
      const runtime = createApiRuntime(config);
      const { server, port } = await startApiServer(runtime.app, apiPort);
      return { runtime, server: server as Server, url: `http://127.0.0.1:${port}` };
    });
    stops.push(async () => {
      // Open event streams would hold the server open: close them with it.
      await new Promise<void>((resolve) => {
        api.server.close(() => resolve());
        api.server.closeAllConnections();
      });
      await api.runtime.close();
    });

    // The tenant's default environment: the runner's with --runner, the worker otherwise.
    await setDevRunnerDefault(stack.s3, DEMO_TENANT, values.runner === true);
    const client = new ApiClient({ baseUrl: api.url, apiKey: DEV_API_KEY });
    let runner: DevRunner | undefined;
    if (values.runner) {
      runner = await step(out, `runner (environment ${DEV_RUNNER_ENVIRONMENT})`, () =>
        startDevRunner(client, api.url, dataDir, (line) => {
          if (!stopping) out.write(`keel dev: ${line}\n`);
        }),
      );
      const started = runner;
      stops.push(() => started.stop());
    }

    out.write(
      [
        "",
        "Keel local stack is up:",
        `  Temporal      ${stack.temporal.address} (namespace ${stack.temporal.namespace})`,
        ...(stack.temporal.uiUrl ? [`  Temporal UI   ${stack.temporal.uiUrl}`] : []),
        ...(jaeger
          ? [
              `  Traces        ${traceViewer?.url} (each run's trace as a waterfall; Jaeger's query API: ${jaeger.uiUrl}/api/traces?service=keel-api)`,
              `  Metrics       ${jaeger.metricsUrl}`,
            ]
          : otelEndpoint
            ? [`  Telemetry     ${otelEndpoint} (OTLP)`]
            : []),
        `  S3            ${stack.s3.endpoint ?? "AWS S3"} (bucket ${stack.s3.bucket})`,
        `  LLM           ${llm ? `local LLM server ${llm.url} (model ${model}; POST ${llm.url}/_scenarios adds scenarios until the stack stops, at this URL again after a restart)` : `model ${model}`}`,
        `  worker        pid ${worker.current().pid}, task queue ${serverEnv.KEEL_TASK_QUEUE}, workspaces in ${workspaceRoot}, log ${workerLog} (restarted when it dies)`,
        `  worker env    ${passedOn.names.length > 0 ? `${passedOn.names.join(", ")} (passed on from this environment)` : "no worker settings set in this environment (KEEL_MCP_MOUNTS, KEEL_SANDBOX_*, … are passed on when set)"}`,
        ...(runner
          ? [
              `  runner        pid ${runner.process.current().pid}, environment ${DEV_RUNNER_ENVIRONMENT} (the tenant's default: tools run here), workspaces in ${runner.workspaceRoot}, log ${runner.logFile} (restarted when it dies)`,
            ]
          : []),
        `  API           ${api.url} (tenant ${DEMO_TENANT}: key ${DEV_API_KEY}; operator key for \`keel admin\`: ${DEV_ADMIN_KEY})`,
        "",
        "Use the CLI from another terminal:",
        `  export KEEL_API_URL=${api.url} KEEL_API_KEY=${DEV_API_KEY} KEEL_ADMIN_KEY=${DEV_ADMIN_KEY}`,
        // A directory workspace is copied on the worker: a runner acts on its own directories.
        runner
          ? `  npx keel run "list the files" --follow    # tools run in ${runner.workspaceRoot}/<session>`
          : `  npx keel run "list the files" --workspace-dir examples/sample-project --follow`,
        "",
      ].join("\n"),
    );

    if (!values["no-demo"] && !stopping) {
      runDemo({
        client,
        out,
        model,
        scripted: local,
        temporal: stack.temporal,
        s3: stack.s3,
        workspaceRoot,
        ...(runner ? { runnerWorkspaceRoot: runner.workspaceRoot } : {}),
        apiUrl: api.url,
        ...(traceViewer ? { tracesUrl: traceViewer.url } : {}),
      }).then(
        () => out.write("The stack stays up. Press Ctrl-C to stop.\n"),
        (error: unknown) => {
          if (!stopping)
            out.write(`Demo failed: ${error instanceof Error ? error.message : String(error)}\n`);
        },
      );
    } else {
      out.write("Press Ctrl-C to stop.\n");
    }
    await signal;
  } catch (error) {
    if (!stopping) {
      await stopAll();
      throw error;
    }
  }
  out.write("\nStopping the local stack…\n");
  await stopAll();
  out.write("Stopped.\n");
  return EXIT.ok;
}
