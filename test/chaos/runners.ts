/**
 * The chaos stage's `runner` environment: created through the API with the chaos tenant's key, one
 * runner token issued, and two `keel runner --snapshots` processes (slots "a" and "b") serving it,
 * each on a workspace root of its own, as runners of two machines would: a session's workspace
 * moves between them through the API (each store names the generation it replaces, and a runner
 * whose copy is not the stored generation restores the stored one first). A slot's replacement
 * runner gets the slot's root again, as a restarted machine keeps its disk (with copies that may
 * have fallen behind). Each runner is its own process group (src/cli/devstack/service-process), so
 * a SIGKILL takes its tool sandboxes with it.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type ServiceProcess, startServiceProcess } from "../../src/cli/devstack/service-process";
import { projectRoot } from "../../src/cli/devstack/tools";
import { MCP_WORKER_ENV } from "../support/mcp-servers";
import type { ChaosApiClient } from "./api-client";

export const CHAOS_ENVIRONMENT = "chaos-runners";
export const RUNNER_SLOTS = ["a", "b"] as const;
export type RunnerSlot = (typeof RUNNER_SLOTS)[number];

export interface ChaosRunners {
  /** Each slot's own disk: its runners keep a session's copy in `<root>/<session>`. */
  workspaceRoots: Record<RunnerSlot, string>;
  /** Starts a runner in `slot` (which must be empty). */
  start(slot: RunnerSlot): Promise<void>;
  /** Ids of the calls the slot's runner claimed and has not finished (from its log). */
  heldCalls(slot: RunnerSlot): string[];
  /** SIGKILLs the slot's runner (its process group) and empties the slot. */
  kill(slot: RunnerSlot): Promise<void>;
  close(): Promise<void>;
}

/** Log messages that end a runner's hold on a call (src/runner/runner.ts). */
const CALL_OVER = new Set([
  "call done",
  "result not stored",
  "call lost to another attempt; its output is dropped",
]);

/**
 * The calls a runner holds, from its JSON log lines in order: claimed and not yet done, dropped or
 * given up. Lines that are not JSON (a stack trace) are skipped.
 */
export function heldCallsOf(log: string): string[] {
  const held = new Set<string>();
  for (const line of log.split("\n")) {
    let parsed: { msg?: unknown; callId?: unknown };
    try {
      parsed = JSON.parse(line) as typeof parsed;
    } catch {
      continue;
    }
    if (typeof parsed.callId !== "string") continue;
    if (parsed.msg === "call claimed") held.add(parsed.callId);
    else if (typeof parsed.msg === "string" && CALL_OVER.has(parsed.msg)) held.delete(parsed.callId);
  }
  return [...held];
}

/** Creates the environment and its token through `api` and starts both runners against `apiUrl`. */
export async function startChaosRunners(
  api: ChaosApiClient,
  apiUrl: string,
  dir: string,
): Promise<ChaosRunners> {
  const created = await api.post(
    "/v1/environments",
    { name: CHAOS_ENVIRONMENT },
    `${CHAOS_ENVIRONMENT}-create`,
  );
  if (created.status !== 201) throw new Error(`creating the runner environment: HTTP ${created.status}`);
  const issued = await api.post(
    `/v1/environments/${CHAOS_ENVIRONMENT}/tokens`,
    {},
    `${CHAOS_ENVIRONMENT}-token`,
  );
  if (issued.status !== 201) throw new Error(`issuing a runner token: HTTP ${issued.status}`);
  const token = String(issued.body.token);
  const workspaceRoots: Record<RunnerSlot, string> = {
    a: join(dir, "runner-workspaces-a"),
    b: join(dir, "runner-workspaces-b"),
  };
  for (const root of Object.values(workspaceRoots)) mkdirSync(root, { recursive: true });
  const slots: Record<RunnerSlot, ServiceProcess | undefined> = { a: undefined, b: undefined };
  /** Runners started per slot: each gets its own log file, so a replacement's log starts empty. */
  const started: Record<RunnerSlot, number> = { a: 0, b: 0 };
  const alive = (slot: RunnerSlot) => (slots[slot]?.isAlive() ? slots[slot] : undefined);

  const runners: ChaosRunners = {
    workspaceRoots,
    async start(slot) {
      if (alive(slot)) throw new Error(`runner ${slot} is already running`);
      started[slot] += 1;
      slots[slot] = startServiceProcess(
        `runner-${slot}`,
        process.execPath,
        [
          "--import",
          "tsx",
          join(projectRoot, "src/cli/main.ts"),
          "runner",
          "--env",
          CHAOS_ENVIRONMENT,
          "--workspace-root",
          workspaceRoots[slot],
          // Each session's copy checked against the generation the API stores, and stored there
          // (conditionally) after every call that may change it, before the call's result.
          "--snapshots",
        ],
        {
          logFile: join(dir, `runner-${slot}-${started[slot]}.log`),
          cwd: projectRoot,
          // Its token and the API's URL, nothing of the stack's (no Temporal, S3 or provider setting).
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            KEEL_API_URL: apiUrl,
            KEEL_RUNNER_TOKEN: token,
            // Where its sessions' MCP servers' programs are (mounted read-only into their sandbox).
            ...MCP_WORKER_ENV,
          },
        },
      );
    },
    heldCalls(slot) {
      const runner = alive(slot);
      return runner ? heldCallsOf(readFileSync(runner.logFile, "utf8")) : [];
    },
    async kill(slot) {
      await slots[slot]?.kill();
      slots[slot] = undefined;
    },
    async close() {
      await Promise.all(RUNNER_SLOTS.map((slot) => slots[slot]?.stop(2_000)));
    },
  };
  for (const slot of RUNNER_SLOTS) await runners.start(slot);
  return runners;
}
