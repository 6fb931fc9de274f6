/**
 * `npm run cluster`: starts the local production-shaped cluster (bench/cluster/cluster.ts), runs a
 * smoke run through the API address, prints where everything is and stays in the foreground until
 * Ctrl-C or `npm run cluster -- stop` (which signals it through the pid file and waits until every
 * process is gone). `npm run cluster -- status` says whether one runs. Data stays in
 * `.keel/cluster` between starts.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startCluster } from "./cluster";
import { apiUrl, llmUrl } from "./keel";
import { clusterDir, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TENANT_KEYS } from "./layout";
import { clusterS3Settings } from "./seaweedfs";
import { smokeRun } from "./smoke";

const pidFile = join(clusterDir, "cluster.pid");
const STOP_TIMEOUT_MS = 120_000;
const say = (line: string) => process.stdout.write(`cluster: ${line}\n`);

function runningPid(): number | undefined {
  try {
    const pid = Number(readFileSync(pidFile, "utf8"));
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

async function start(): Promise<void> {
  if (runningPid() !== undefined) throw new Error(`a cluster already runs (pid ${runningPid()})`);
  const cluster = await startCluster(say);
  writeFileSync(pidFile, String(process.pid));
  let stopping = false;
  const stop = async (exitCode: number) => {
    if (stopping) return;
    stopping = true;
    say("stopping");
    await cluster.stop();
    rmSync(pidFile, { force: true });
    say("stopped");
    process.exit(exitCode);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));
  let smoke: string;
  try {
    smoke = await smokeRun();
  } catch (error) {
    say(error instanceof Error ? error.message : String(error));
    await stop(1);
    return;
  }
  say(`smoke run through ${apiUrl}: ${smoke}`);
  say(
    [
      "up:",
      `  API        ${apiUrl} (nginx → ${cluster.parts.filter((part) => part.kind === "api").length} API processes; tenant keys: load ${TENANT_KEYS.load}, runners ${TENANT_KEYS.runners})`,
      `  Temporal   ${TEMPORAL_ADDRESS} (namespace ${TEMPORAL_NAMESPACE})`,
      `  S3         ${clusterS3Settings.endpoint} (bucket ${clusterS3Settings.bucket})`,
      `  LLM        ${llmUrl} (POST /_scenarios)`,
      `  processes  ${cluster.parts.map((part) => `${part.name}:${part.current().pid}`).join(" ")}`,
      `  logs       ${clusterDir}`,
      "Ctrl-C or `npm run cluster -- stop` stops it.",
    ].join("\n"),
  );
  // A pending promise alone does not keep Node running; a timer does, until a signal stops it.
  setInterval(() => {}, 60_000);
}

async function stop(): Promise<void> {
  const pid = runningPid();
  if (pid === undefined) {
    say("no cluster runs");
    return;
  }
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (runningPid() !== undefined && Date.now() < deadline) await sleep(500);
  say(runningPid() === undefined ? "stopped" : `pid ${pid} still runs after ${STOP_TIMEOUT_MS / 1000} s`);
}

const command = process.argv[2] ?? "start";
const commands: Record<string, () => Promise<void>> = {
  start,
  stop,
  status: async () => {
    say(runningPid() === undefined ? "no cluster runs" : `runs (pid ${runningPid()})`);
  },
};
const chosen = commands[command];
if (!chosen) {
  process.stderr.write("usage: npm run cluster [-- start|stop|status]\n");
  process.exit(2);
}
chosen().catch((error: unknown) => {
  process.stderr.write(`cluster: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
