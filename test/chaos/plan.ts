/**
 * The chaos plan: every random choice of a chaos run, drawn up front from the seed (the seeded
 * generator of src/core/ids), so the same seed plays the same sessions and the same faults at the
 * same offsets. Only the interleaving with the machine's timing varies between two runs.
 */
import { type RandomSource, seededRandom } from "../../src/core/ids";
import type { ChaosOptions } from "./options";

export interface SessionPlan {
  index: number;
  sessionId: string;
  /** Local LLM scenario the session's messages name (one per session). */
  scenario: string;
  /** Tool turns before the final answer (each a batch of one to three calls). */
  toolTurns: number;
  /** Delay before each model answer starts: slow calls, so kills land mid-call. */
  modelLatencyMs: number;
  /** When set, the run is aborted this long after its message was delivered, then followed up. */
  abortAfterMs?: number;
  /** The abort waits, after `abortAfterMs`, for the next worker kill and lands while that worker is dead. */
  abortAfterKill?: boolean;
  /** When set (never with an abort), a steering message is sent this long after the prompt. */
  steerAfterMs?: number;
  /** The session's tools run on the stack's `runner` environment (its `keel runner` processes), not in the worker. */
  onRunner?: boolean;
  /**
   * The run has a cost and/or token budget (with a pause timeout of 1 s: a run paused at it ends)
   * and its second tool turn has `parallelTasks` parallel `task` calls; never with an abort or a
   * steering message, so the session has one run.
   */
  budget?: SessionBudget;
}

/** A budgeted session's limits (0: no such budget). */
export interface SessionBudget {
  /** Parallel `task` calls in the second tool turn (instead of one). */
  parallelTasks: 2 | 3;
  maxCostUsd: number;
  maxTokens: number;
  /** The budget in model calls of the scripted usage (BUDGETED_CALL): the draw both budgets come from. */
  calls: number;
}

/**
 * The usage every model call of a budgeted session's tree reports (the local LLM server reports it
 * exactly: test/chaos/scenario.ts), and its cost at `local-chat`'s prices in src/providers/models.json
 * ($1 per million input tokens, $2 per million output tokens): 2,000 × $1e-6 + 500 × $2e-6 = $0.003.
 */
export const BUDGETED_CALL = { input: 2_000, output: 500, tokens: 2_500, costUsd: 0.003 } as const;

/** What a runner kill brings with it: nothing, a primary worker SIGKILL at the same moment, or an S3 outage right after it. */
export type RunnerKillCompanion = "alone" | "worker_kill" | "s3_outage";

/** A fault at `atMs` after the fault phase starts. */
export type FaultEvent =
  | { atMs: number; kind: "kill"; prefer: "primary" | "secondary" }
  | { atMs: number; kind: "secondary_start" }
  | { atMs: number; kind: "secondary_stop" }
  | { atMs: number; kind: "temporal_restart" }
  | { atMs: number; kind: "s3_outage"; durationMs: number }
  /**
   * SIGKILL a runner (one holding a call when there is one), then start a replacement; with the
   * primary worker at the same moment when `during` is `worker_kill`; with `s3_outage`, followed at
   * once by the plan's next outage, or by one of `outageMs` of its own when it has that.
   */
  | { atMs: number; kind: "runner_kill"; during: RunnerKillCompanion; outageMs?: number }
  /** SIGKILL the HTTP API process (when a runner holds a call, if one does within 10 s), then start it on its port. */
  | { atMs: number; kind: "api_restart" };

export interface ChaosPlan {
  sessions: SessionPlan[];
  /** In time order. */
  faults: FaultEvent[];
}

const MIN_TOOL_TURNS = 2;
const MAX_TOOL_TURNS = 5;
const MIN_MODEL_LATENCY_MS = 500;
const MAX_MODEL_LATENCY_MS = 4_000;
const MIN_ABORT_AFTER_MS = 1_000;
const MAX_ABORT_AFTER_MS = 12_000;
/** Share of aborts sent just after a worker kill, while the run's activity may be on the dead worker. */
const ABORT_AFTER_KILL_SHARE = 0.5;
/** Share of the sessions not aborted that get a steering message mid-run. */
const STEER_SHARE = 0.5;
const MIN_STEER_AFTER_MS = 1_000;
const MAX_STEER_AFTER_MS = 15_000;
/** Share of kills aimed at the second worker when it is up. */
const SECONDARY_KILL_SHARE = 0.3;
/** The shortest visit of the second worker, as a share of the span between its visits' starts. */
const SECONDARY_MIN_VISIT_SHARE = 0.4;
/** The second worker comes and goes this many times per ten kills (at least once). */
const SECONDARY_CYCLES_PER_TEN_KILLS = 2;

function between(random: RandomSource, low: number, high: number): number {
  return low + Math.floor(random() * (high - low + 1));
}

/** `count` distinct indices of `0..size-1`, in increasing order. */
function pick(random: RandomSource, size: number, count: number): number[] {
  const indices = [...Array(size).keys()];
  for (let i = size - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [indices[i], indices[j]] = [indices[j] as number, indices[i] as number];
  }
  return indices.slice(0, count).sort((a, b) => a - b);
}

/** Runner kills cycle through their companions in this order (each is met once in every three kills). */
const RUNNER_KILL_COMPANIONS: readonly RunnerKillCompanion[] = ["alone", "worker_kill", "s3_outage"];

/**
 * `count` runner kills at random times of `span`, by turns alone, with a primary worker SIGKILL and
 * with an S3 outage (the kill brings its companion: test/chaos/faults.ts). A kill with an outage
 * takes one of `outages` not yet taken (it comes 1 ms before it: the runner dies, then S3 goes down);
 * when none is left it brings an outage of `s3OutageMs` of its own.
 */
function runnerKills(
  random: RandomSource,
  count: number,
  span: number,
  outages: FaultEvent[],
  s3OutageMs: number,
): FaultEvent[] {
  const free = [...outages];
  return [...Array(count).keys()].map((index): FaultEvent => {
    const atMs = between(random, Math.floor(span * 0.1), span);
    const during = RUNNER_KILL_COMPANIONS[index % RUNNER_KILL_COMPANIONS.length] as RunnerKillCompanion;
    if (during !== "s3_outage") return { atMs, kind: "runner_kill", during };
    const outage = free.shift();
    return outage
      ? { atMs: Math.max(0, outage.atMs - 1), kind: "runner_kill", during }
      : { atMs, kind: "runner_kill", during, outageMs: s3OutageMs };
  });
}

/**
 * A budgeted session's budget, in model calls of BUDGETED_CALL, between `2 + N/2` (the parent's
 * two calls before its `task` batch, then half a call per child: each child ends after its first
 * call and the parent pauses at the next turn boundary, so the run ends at its 1 s pause timeout)
 * and `toolTurns + 2N + 1.5` (every child's two calls and all the parent's fit: nothing stops);
 * a cost budget, a token budget or both.
 */
function drawBudget(random: RandomSource, toolTurns: number): SessionBudget {
  const parallelTasks: 2 | 3 = random() < 0.5 ? 2 : 3;
  const low = 2 + parallelTasks / 2;
  const high = toolTurns + 2 * parallelTasks + 1.5;
  const calls = Math.round((low + random() * (high - low)) * 100) / 100;
  const kind = random();
  const cost = kind < 2 / 3;
  const tokens = kind >= 1 / 3;
  return {
    parallelTasks,
    maxCostUsd: cost ? Number((calls * BUDGETED_CALL.costUsd).toFixed(6)) : 0,
    maxTokens: tokens ? Math.round(calls * BUDGETED_CALL.tokens) : 0,
    calls,
  };
}

/** Draws the plan for `options`; equal options give equal plans. */
export function makeChaosPlan(options: ChaosOptions): ChaosPlan {
  const random = seededRandom(options.seed);
  const aborted = new Set(pick(random, options.runs, options.aborts));
  const sessions: SessionPlan[] = [...Array(options.runs).keys()].map((index) => {
    const name = `chaos-${options.seed}-r${index}`;
    const session: SessionPlan = {
      index,
      sessionId: name,
      scenario: name,
      toolTurns: between(random, MIN_TOOL_TURNS, MAX_TOOL_TURNS),
      modelLatencyMs: between(random, MIN_MODEL_LATENCY_MS, MAX_MODEL_LATENCY_MS),
    };
    if (aborted.has(index)) {
      session.abortAfterMs = between(random, MIN_ABORT_AFTER_MS, MAX_ABORT_AFTER_MS);
      session.abortAfterKill = random() < ABORT_AFTER_KILL_SHARE;
    } else if (random() < STEER_SHARE) {
      session.steerAfterMs = between(random, MIN_STEER_AFTER_MS, MAX_STEER_AFTER_MS);
    }
    return session;
  });

  const faults: FaultEvent[] = [];
  let at = 0;
  for (let kill = 0; kill < options.kills; kill++) {
    at += Math.round(options.killEveryMs * (0.5 + random()));
    faults.push({
      atMs: at,
      kind: "kill",
      prefer: random() < SECONDARY_KILL_SHARE ? "secondary" : "primary",
    });
  }
  // Whole-stack faults and the second worker's visits fall inside the kills' span (or the first
  // two minutes when there are no kills), so they meet runs in flight.
  const span = at > 0 ? at : 120_000;
  const cycles = Math.max(1, Math.round((options.kills / 10) * SECONDARY_CYCLES_PER_TEN_KILLS));
  for (let cycle = 0; cycle < cycles; cycle++) {
    const start = between(
      random,
      Math.floor((cycle * span) / cycles),
      Math.floor(((cycle + 0.5) * span) / cycles),
    );
    // Long enough to take runs' claims: its workspaces move to the primary's disk when it goes,
    // and back when a later run of theirs lands on it again (the holder epochs' case).
    const shortest = Math.max(5_000, Math.floor((SECONDARY_MIN_VISIT_SHARE * span) / cycles));
    const stop = between(random, start + shortest, Math.floor(((cycle + 1) * span) / cycles) + shortest);
    faults.push({ atMs: start, kind: "secondary_start" }, { atMs: stop, kind: "secondary_stop" });
  }
  for (let restart = 0; restart < options.temporalRestarts; restart++) {
    faults.push({
      atMs: between(random, Math.floor(span * 0.3), Math.floor(span * 0.8)),
      kind: "temporal_restart",
    });
  }
  for (let outage = 0; outage < options.s3Outages; outage++) {
    faults.push({
      atMs: between(random, Math.floor(span * 0.2), Math.floor(span * 0.6)),
      kind: "s3_outage",
      durationMs: options.s3OutageMs,
    });
  }
  // Drawn last, so a seed plays the same sessions and worker/stack faults as before runners came.
  for (const index of pick(random, options.runs, options.runnerSessions)) {
    (sessions[index] as SessionPlan).onRunner = true;
  }
  const outages = faults.filter((fault) => fault.kind === "s3_outage");
  faults.push(...runnerKills(random, options.runnerKills, span, outages, options.s3OutageMs));
  // API restarts and budgets are drawn after the runners': a seed without them plays as before.
  for (let restart = 0; restart < options.apiRestarts; restart++) {
    faults.push({
      atMs: between(random, Math.floor(span * 0.1), Math.floor(span * 0.9)),
      kind: "api_restart",
    });
  }
  const notAborted = sessions.filter((session) => session.abortAfterMs === undefined);
  for (const index of pick(random, notAborted.length, options.budgetedSessions)) {
    const session = notAborted[index] as SessionPlan;
    session.budget = drawBudget(random, session.toolTurns);
    delete session.steerAfterMs;
  }
  // Stable: a runner kill 1 ms before its outage stays before it.
  faults.sort((a, b) => a.atMs - b.atMs);
  return { sessions, faults };
}
