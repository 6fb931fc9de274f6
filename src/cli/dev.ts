/**
 * `keel dev`: the local stack. Starts the Temporal dev server (web UI, state persisted in
 * `.keel/data/temporal`) and the S3 server (bucket created), prints where they are, and stops
 * everything on Ctrl-C. Existing servers are used instead when KEEL_TEMPORAL_ADDRESS or
 * KEEL_S3_ENDPOINT / KEEL_S3_BUCKET are set.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type S3Settings, s3SettingsFromEnv } from "../store/s3-config";
import { freePort } from "./devstack/ports";
import { startS3DevServer } from "./devstack/s3-server";
import { startTemporalDevServer } from "./devstack/temporal-server";
import { projectRoot } from "./devstack/tools";

export interface DevStack {
  temporal: { address: string; namespace: string; uiUrl?: string };
  s3: S3Settings;
  stop(): Promise<void>;
}

const DEFAULT_PORTS = { temporal: 7233, temporalUi: 8233, s3: 8333 };

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

export async function startDevStack(env: NodeJS.ProcessEnv = process.env): Promise<DevStack> {
  const dataDir = env.KEEL_DATA_DIR ?? join(projectRoot, ".keel/data");
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    await Promise.all(stops.splice(0).map((fn) => fn()));
  };
  try {
    let temporal: DevStack["temporal"];
    if (env.KEEL_TEMPORAL_ADDRESS) {
      temporal = { address: env.KEEL_TEMPORAL_ADDRESS, namespace: env.KEEL_TEMPORAL_NAMESPACE ?? "default" };
    } else {
      const temporalDir = join(dataDir, "temporal");
      mkdirSync(temporalDir, { recursive: true });
      const server = await startTemporalDevServer({
        dataDir: temporalDir,
        persist: true,
        port: await portOr(DEFAULT_PORTS.temporal),
        uiPort: await portOr(DEFAULT_PORTS.temporalUi),
        namespace: env.KEEL_TEMPORAL_NAMESPACE ?? "default",
      });
      stops.push(() => server.process.stop());
      temporal = { address: server.address, namespace: server.namespace, uiUrl: server.uiUrl };
    }

    let s3: S3Settings;
    if (env.KEEL_S3_ENDPOINT || env.KEEL_S3_BUCKET) {
      s3 = s3SettingsFromEnv(env);
    } else {
      const s3Dir = join(dataDir, "s3");
      mkdirSync(s3Dir, { recursive: true });
      const server = await startS3DevServer({
        dataDir: s3Dir,
        bucket: "keel",
        port: await portOr(DEFAULT_PORTS.s3),
      });
      stops.push(() => server.process.stop());
      s3 = server.settings;
    }
    return { temporal, s3, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Runs the local stack in the foreground until SIGINT / SIGTERM. */
export async function runDev(): Promise<void> {
  const stack = await startDevStack();
  const lines = [
    "Keel local stack is up:",
    `  Temporal      ${stack.temporal.address} (namespace ${stack.temporal.namespace})`,
    ...(stack.temporal.uiUrl ? [`  Temporal UI   ${stack.temporal.uiUrl}`] : []),
    `  S3            ${stack.s3.endpoint ?? "AWS S3"} (bucket ${stack.s3.bucket})`,
    "Press Ctrl-C to stop.",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  await new Promise<void>((resolveStop) => {
    // The servers are detached; this timer is what keeps the process (and so the stack) alive.
    const keepAlive = setInterval(() => {}, 60_000);
    const onSignal = () => {
      clearInterval(keepAlive);
      resolveStop();
    };
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  });
  process.stdout.write("Stopping the local stack...\n");
  await stack.stop();
  process.stdout.write("Stopped.\n");
}
