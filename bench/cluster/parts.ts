/**
 * One process of the local cluster as the start script, the load benchmark and the fault run see
 * it: what kind of part it is (CPU is reported per kind), the process running now, and how to
 * start it again after a fault (same ports, same data).
 */
import { execFileSync } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import type { ServiceProcess } from "../../src/cli/devstack/service-process";

/** Kinds the results report CPU for (Temporal's services one by one). */
export type PartKind =
  | "postgres"
  | "temporal-history"
  | "temporal-matching"
  | "temporal-frontend"
  | "temporal-worker"
  | "seaweedfs"
  | "nginx"
  | "llm"
  | "api"
  | "keel-worker"
  | "runner";

export interface ClusterPart {
  name: string;
  kind: PartKind;
  current(): ServiceProcess;
  /** Starts the part again after it stopped or was killed, waiting for its health check. */
  restart(): Promise<void>;
}

/** A part whose process is started by `start` (which waits until it is healthy). */
export async function startPart(
  name: string,
  kind: PartKind,
  start: () => Promise<ServiceProcess>,
): Promise<ClusterPart> {
  let process = await start();
  return {
    name,
    kind,
    current: () => process,
    async restart() {
      if (process.isAlive()) await process.stop();
      process = await start();
    },
  };
}

/** Polls `check` every `intervalMs` until it resolves true; fails with `what` after `timeoutMs`. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  options: { timeoutMs: number; intervalMs?: number; isAlive?: () => boolean },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError = "";
  while (Date.now() < deadline) {
    if (options.isAlive && !options.isAlive()) throw new Error(`${what}: the process exited`);
    try {
      if (await check()) return;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    await sleep(options.intervalMs ?? 500);
  }
  throw new Error(`${what}: not ready within ${options.timeoutMs} ms${lastError ? ` (${lastError})` : ""}`);
}

/** True when `url` answers 2xx. */
export async function httpOk(url: string): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  await response.arrayBuffer();
  return response.ok;
}

/** Runs a command, returning its stdout; throws with its stderr when it fails. */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  try {
    return execFileSync(command, args, { encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    const failed = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(
      `${command} ${args.join(" ")} failed: ${failed.stderr || failed.stdout || failed.message}`,
    );
  }
}
