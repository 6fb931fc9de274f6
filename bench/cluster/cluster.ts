/**
 * The whole local cluster, started part by part in dependency order (PostgreSQL, Temporal,
 * SeaweedFS, then Keel), each part healthy before the next starts, and stopped in reverse order.
 * Refuses to start under CI (`CI=true`: it builds the Temporal server and needs the machine) or
 * when a fixed port is taken (named). Every process runs in its own process group, reaped if the
 * process that started the cluster dies.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { projectRoot } from "../../src/cli/devstack/tools";
import { type KeelOptions, startKeel } from "./keel";
import { allFixedPorts, clusterDir } from "./layout";
import type { ClusterPart } from "./parts";
import { startPostgres } from "./postgres";
import { startSeaweedfs } from "./seaweedfs";
import { startTemporal } from "./temporal";

export interface Cluster {
  parts: ClusterPart[];
  part(name: string): ClusterPart;
  stop(): Promise<void>;
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once("error", () => done(false));
    server.listen(port, "127.0.0.1", () => server.close(() => done(true)));
  });
}

async function checkPortsFree(): Promise<void> {
  const taken: number[] = [];
  for (const port of allFixedPorts()) if (!(await portIsFree(port))) taken.push(port);
  if (taken.length > 0) {
    throw new Error(
      `ports in use: ${taken.join(", ")} (is a cluster already running? \`npm run cluster -- stop\`)`,
    );
  }
}

/** Stops parts in reverse start order (clients before the servers they use). */
async function stopParts(parts: ClusterPart[]): Promise<void> {
  for (const part of [...parts].reverse()) await part.current().stop();
}

/**
 * Builds the Temporal server when missing, then starts everything; `say` hears each step.
 * `serversOnly`: PostgreSQL, Temporal and SeaweedFS without Keel's processes (a benchmark that
 * runs its own workers against them).
 */
export async function startCluster(
  say: (line: string) => void,
  keelOptions: KeelOptions = {},
  options: { serversOnly?: boolean } = {},
): Promise<Cluster> {
  if (process.env.CI === "true") throw new Error("the local cluster does not run under CI (CI=true)");
  await checkPortsFree();
  mkdirSync(clusterDir, { recursive: true });
  execFileSync(process.execPath, [join(projectRoot, "scripts/ensure-temporal-server.mjs")], {
    stdio: "inherit",
  });
  const parts: ClusterPart[] = [];
  const steps: Array<[string, () => Promise<ClusterPart | ClusterPart[]>]> = [
    ["PostgreSQL", startPostgres],
    ["Temporal (schema, 2 history, 2 matching, frontend, worker; namespace)", startTemporal],
    ["SeaweedFS (master, 3 volume servers, filer + S3)", startSeaweedfs],
    ["Keel (LLM server, 2 APIs, nginx, 3 workers, 2 runners)", () => startKeel(keelOptions)],
  ];
  if (options.serversOnly) steps.pop();
  try {
    for (const [label, start] of steps) {
      const began = Date.now();
      const started = await start();
      parts.push(...(Array.isArray(started) ? started : [started]));
      say(`${label}: up in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    }
  } catch (error) {
    await stopParts(parts);
    throw error;
  }
  return {
    parts,
    part(name) {
      const found = parts.find((part) => part.name === name);
      if (!found) throw new Error(`no cluster part ${name}`);
      return found;
    },
    stop: () => stopParts(parts),
  };
}
