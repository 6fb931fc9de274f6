/**
 * Plays the plan's faults against the stack at their offsets, and keeps a primary worker alive:
 * a killed primary is started again at once, one that died on its own is restarted and counted.
 * An API server that exits on its own is started again and counted (with its last log lines).
 * A runner kill SIGKILLs a `keel runner` (one holding a call when one does within 10 s) and starts a
 * replacement, alone or with its companion fault (test/chaos/plan.ts). An API restart SIGKILLs the
 * API server (while a runner holds a call, when one does within 10 s) and starts it on its port.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { FaultEvent, RunnerKillCompanion } from "./plan";
import { type ChaosRunners, RUNNER_SLOTS, type RunnerSlot } from "./runners";
import type { ChaosStack, WorkerRole } from "./stack";

export interface FaultTally {
  kills: { primary: number; secondary: number };
  secondaryStarts: number;
  secondaryStops: number;
  temporalRestarts: number;
  s3Outages: number;
  /** Runner SIGKILLs (each followed by a replacement): while holding a call or idle, and what they met. */
  runnerKills: { holding: number; idle: number; during: Record<RunnerKillCompanion, number> };
  /** Planned API server SIGKILLs (each followed by a start on the same port): while a runner held a call, or not. */
  apiRestarts: { holding: number; idle: number };
  /** Workers that exited without being killed or stopped by the suite. */
  unplannedWorkerExits: number;
  /** The API server exiting on its own (nothing here stops it): the last lines of its log, each time. */
  apiExits: string[];
  /** Faults the plan had that the run phase ended before. */
  skipped: number;
  /** Faults that could not be applied (the stack itself failed): the chaos run is not valid. */
  errors: string[];
  /** What was done, with offsets from the start of the fault phase. */
  log: string[];
}

export interface FaultPlayer {
  tally: FaultTally;
  /** Resolves just after the next worker SIGKILL (before the worker is started again). */
  nextKill(): Promise<void>;
  /**
   * Epoch ms when the latest fault was over (the killed worker started again, the server back up,
   * a worker that died on its own restarted); the start of the fault phase before the first one.
   */
  lastFaultAt(): number;
  /** Stops injecting (faults not yet due are skipped) and resolves once the current one is done. */
  stop(): Promise<void>;
  /** Stops watching the primary worker and the API server (after the checks, which need both). */
  close(): void;
}

const WATCH_INTERVAL_MS = 1_000;
const START_RETRY_MS = 2_000;
const WORKER_START_BOUND_MS = 5 * 60_000;
/** A runner kill waits this long at most for a runner that holds a call (else it kills an idle one). */
const RUNNER_HOLD_WAIT_MS = 10_000;
/** A runner killed with an S3 outage is replaced this long into the outage (its claims then fail until S3 is back). */
const RUNNER_REPLACE_IN_OUTAGE_MS = 1_000;
const RUNNER_HOLD_POLL_MS = 100;

/** A tally of no fault at all. */
export function emptyFaultTally(): FaultTally {
  return {
    kills: { primary: 0, secondary: 0 },
    secondaryStarts: 0,
    secondaryStops: 0,
    temporalRestarts: 0,
    s3Outages: 0,
    runnerKills: { holding: 0, idle: 0, during: { alone: 0, worker_kill: 0, s3_outage: 0 } },
    apiRestarts: { holding: 0, idle: 0 },
    unplannedWorkerExits: 0,
    apiExits: [],
    skipped: 0,
    errors: [],
    log: [],
  };
}

/**
 * Starts playing `faults` (in time order) now; `runners` serve the plan's runner environment (its
 * runner kills are errors without them).
 */
export function playFaults(
  stack: ChaosStack,
  faults: readonly FaultEvent[],
  runners?: ChaosRunners,
): FaultPlayer {
  const tally = emptyFaultTally();
  const started = Date.now();
  let lastFaultAt = started;
  let stopping = false;
  let killWaiters: Array<() => void> = [];
  /** Set once the plan has no kill left: waiting for one would never end. */
  let killsOver = false;
  const killed = () => {
    for (const wake of killWaiters) wake();
    killWaiters = [];
  };
  const note = (line: string) => {
    tally.log.push(`+${((Date.now() - started) / 1000).toFixed(1)} s ${line}`);
  };

  /** Starts the worker, retrying while the stack is down (Temporal or S3 restarting); bounded. */
  const ensureWorker = async (role: WorkerRole) => {
    const deadline = Date.now() + WORKER_START_BOUND_MS;
    while (!stack.worker(role)) {
      if (Date.now() > deadline)
        throw new Error(`the ${role} worker did not start within ${WORKER_START_BOUND_MS} ms`);
      try {
        await stack.startWorker(role);
      } catch (error) {
        note(`${role} worker did not start (${(error as Error).message.split("\n")[0]}); retrying`);
        await sleep(START_RETRY_MS);
      }
    }
  };

  /** The first runner that holds a call within RUNNER_HOLD_WAIT_MS, with how many it holds. */
  const holdingRunner = async (
    pool: ChaosRunners,
  ): Promise<{ slot: RunnerSlot; held: number } | undefined> => {
    const deadline = Date.now() + RUNNER_HOLD_WAIT_MS;
    for (;;) {
      for (const slot of RUNNER_SLOTS) {
        const held = pool.heldCalls(slot).length;
        if (held > 0) return { slot, held };
      }
      if (Date.now() >= deadline || stopping) return undefined;
      await sleep(RUNNER_HOLD_POLL_MS);
    }
  };

  /**
   * The runner to kill: the first that holds a call within RUNNER_HOLD_WAIT_MS; when none does,
   * the slots take turns.
   */
  const runnerTarget = async (pool: ChaosRunners): Promise<{ slot: RunnerSlot; held: number }> => {
    const holding = await holdingRunner(pool);
    if (holding) return holding;
    const turn = tally.runnerKills.holding + tally.runnerKills.idle;
    return { slot: RUNNER_SLOTS[turn % RUNNER_SLOTS.length] as RunnerSlot, held: 0 };
  };

  /**
   * A runner kill and its companion: the primary worker killed with it, or S3 down right after it
   * (an outage of its own here, else the plan's next fault, due 1 ms later, is that outage).
   */
  const killRunner = async (fault: Extract<FaultEvent, { kind: "runner_kill" }>) => {
    if (!runners) throw new Error("the plan kills runners but none were started");
    const { slot, held } = await runnerTarget(runners);
    const alsoWorker = fault.during === "worker_kill";
    await Promise.all([runners.kill(slot), alsoWorker ? stack.killWorker("primary") : undefined]);
    tally.runnerKills[held > 0 ? "holding" : "idle"] += 1;
    tally.runnerKills.during[fault.during] += 1;
    note(
      `SIGKILL runner ${slot} (${held > 0 ? `holding ${held} call${held === 1 ? "" : "s"}` : "holding no call"})${alsoWorker ? " and the primary worker" : ""}`,
    );
    if (alsoWorker) killed();
    if (fault.outageMs !== undefined) {
      const outageMs = fault.outageMs;
      note(`S3 server down for ${outageMs} ms`);
      await Promise.all([
        stack.s3Outage(outageMs).then(() => note("S3 server up again")),
        sleep(RUNNER_REPLACE_IN_OUTAGE_MS).then(() => runners.start(slot)),
      ]);
    } else await runners.start(slot);
    note(`runner ${slot} replaced`);
    if (alsoWorker) await ensureWorker("primary");
  };

  /** Set while the API server is down for a restart: the watcher leaves it alone then. */
  let restartingApi = false;

  /**
   * SIGKILLs the API server while a runner holds a call (its heartbeats and result then meet no
   * server), or after RUNNER_HOLD_WAIT_MS without one, and starts it again on its port.
   */
  const restartApi = async () => {
    const holding = runners ? await holdingRunner(runners) : undefined;
    restartingApi = true;
    try {
      await stack.killApi();
      note(
        `SIGKILL the API server (${holding ? `runner ${holding.slot} holding ${holding.held} call${holding.held === 1 ? "" : "s"}` : "no runner holding a call"})`,
      );
      await stack.restartApi();
      tally.apiRestarts[holding ? "holding" : "idle"] += 1;
      note("API server started again on its port");
    } finally {
      restartingApi = false;
    }
  };

  const apply = async (fault: FaultEvent) => {
    switch (fault.kind) {
      case "kill": {
        const target: WorkerRole =
          fault.prefer === "secondary" && stack.worker("secondary") ? "secondary" : "primary";
        await stack.killWorker(target);
        tally.kills[target] += 1;
        note(`SIGKILL ${target} worker`);
        killed();
        if (target === "primary") await ensureWorker("primary");
        return;
      }
      case "secondary_start":
        if (stack.worker("secondary")) return;
        await ensureWorker("secondary");
        tally.secondaryStarts += 1;
        note("second worker started");
        return;
      case "secondary_stop":
        if (!stack.worker("secondary")) return;
        await stack.stopWorker("secondary");
        tally.secondaryStops += 1;
        note("second worker stopped (SIGTERM)");
        return;
      case "temporal_restart":
        note("Temporal dev server stopping");
        await stack.restartTemporal();
        tally.temporalRestarts += 1;
        note("Temporal dev server restarted on its database");
        return;
      case "s3_outage":
        note(`S3 server down for ${fault.durationMs} ms`);
        await stack.s3Outage(fault.durationMs);
        tally.s3Outages += 1;
        note("S3 server up again");
        return;
      case "runner_kill":
        await killRunner(fault);
        return;
      case "api_restart":
        await restartApi();
        return;
    }
  };

  const watchApi = () => {
    if (restartingApi || stack.apiAlive()) return;
    restartingApi = true;
    note("the API server exited on its own; restarting it");
    void stack
      .restartApi()
      .then((lastWords) => tally.apiExits.push(lastWords))
      .catch((error: unknown) =>
        tally.errors.push(`the API server did not restart: ${(error as Error).message}`),
      )
      .finally(() => {
        restartingApi = false;
      });
  };

  let busy = false;
  const watcher = setInterval(() => {
    watchApi();
    // The primary's slot is empty only between a kill and its restart, both inside a busy step.
    if (busy || stack.worker("primary")) return;
    tally.unplannedWorkerExits += 1;
    note("primary worker exited on its own; restarting");
    busy = true;
    void ensureWorker("primary")
      .catch((error: unknown) => tally.errors.push((error as Error).message))
      .finally(() => {
        lastFaultAt = Date.now();
        busy = false;
      });
  }, WATCH_INTERVAL_MS);

  let wake: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const done = (async () => {
    for (const fault of faults) {
      const wait = started + fault.atMs - Date.now();
      if (wait > 0 && !stopping) await Promise.race([sleep(wait), stopped]);
      if (stopping) {
        tally.skipped += 1;
        continue;
      }
      while (busy) await sleep(100);
      busy = true;
      try {
        await apply(fault);
      } catch (error) {
        tally.errors.push(`${fault.kind} at +${fault.atMs} ms failed: ${(error as Error).message}`);
        note(`${fault.kind} failed`);
      } finally {
        lastFaultAt = Date.now();
        busy = false;
      }
    }
    killsOver = true;
    killed();
  })();

  return {
    tally,
    nextKill: () =>
      killsOver ? Promise.resolve() : new Promise<void>((resolve) => killWaiters.push(resolve)),
    lastFaultAt: () => lastFaultAt,
    async stop() {
      stopping = true;
      wake();
      await done;
      while (busy) await sleep(100);
      await ensureWorker("primary");
    },
    close() {
      clearInterval(watcher);
    },
  };
}
