/**
 * Driving one chaos session through the HTTP API, as a user would: deliver the prompt, steer or
 * abort it at the planned moment, wait (bounded) for the run to end, send a follow-up after an
 * abort and wait for that run too. What happened is recorded for the checks and the report; nothing here throws
 * on a misbehaving run.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_RUN_SETTINGS } from "../../src/contracts/runs";
import { TASK_TOOL_NAME } from "../../src/core/agents";
import { everythingServer } from "../support/mcp-servers";
import { ApiGaveUpError, type ChaosApiClient } from "./api-client";
import type { FaultPlayer } from "./faults";
import type { SessionBudget, SessionPlan } from "./plan";
import { CHAOS_ENVIRONMENT } from "./runners";
import { FOLLOW_UP_WORD } from "./scenario";

/** The default tools and `task`: the scenario delegates a read to the built-in `explore` agent. */
const CHAOS_TOOLS = [...DEFAULT_RUN_SETTINGS.tools, TASK_TOOL_NAME];

const POLL_INTERVAL_MS = 1_000;
/** An abort planned after a kill waits this long at most for one. */
const KILL_WAIT_BOUND_MS = 60_000;
/** An abort after a kill lands this long after it: the worker is still dead (a restart takes seconds). */
const ABORT_AFTER_KILL_MS = 300;
/** A budgeted run paused at its budget ends after this long (docs/api.md, "Budgets that pause"). */
const BUDGET_PAUSE_TIMEOUT_SECONDS = 1;
const TERMINAL = new Set(["completed", "aborted", "failed"]);

/** A message the suite sent, and whether the API confirmed its delivery. */
export interface SentMessage {
  text: string;
  idempotencyKey: string;
  /** 202 received (possibly after retries with the same key). */
  confirmed: boolean;
  attempts: number;
  /** Why it was not confirmed. */
  error?: string;
  /** A clear refusal (4xx, e.g. 409 run-ended): the message must then not be stored. */
  refused?: boolean;
}

/** How one run (one delivery that started or reached a run) ended. */
export type RunOutcome =
  | { kind: "ended"; status: "completed" | "aborted" | "failed"; reason: string; ms: number }
  | {
      kind: "stuck";
      lastStatus: string;
      ms: number;
      /** How long after the last fault it was still not over (it is `ms` when no fault came after its delivery). */
      sinceLastFaultMs: number;
    }
  | { kind: "not_started"; error: string }
  /**
   * A later run of the session became its latest before the API showed this one's end: a steering
   * message started it while the API was down or between two polls, or this run continued as new
   * into it (a run that ends with a message handed over, as the API documents, answers with its own
   * id and the message runs in the next execution). How this one ended is Temporal's to say (the
   * checks ask it); `next` is how the later run ended, followed to its end as this one's
   * continuation would be.
   */
  | { kind: "superseded"; runId: string; byRunId: string; ms: number; next: RunOutcome };

export interface SessionRecord {
  plan: SessionPlan;
  messages: SentMessage[];
  /** The prompt's run; a run a late steering message started; after an abort, the follow-up's run. */
  runs: RunOutcome[];
  /** `answered`: the API gave a final answer (202, or a clear refusal such as 409 no-active-run). */
  abort?: { requested: boolean; answered: boolean; detail: string };
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * When a run delivered at `deliveredAt` is stuck if it is not over: `boundMs` after its delivery
 * or after the last fault, whichever is later. A fault costs each run it meets a recovery time
 * (an activity on a killed worker waits out its 30 s heartbeat timeout, then retries), and faults
 * that keep coming keep delaying it, so the bound applies from the moment the faults leave the run
 * alone: a run that does not end then is stuck, not merely delayed.
 */
export function runDeadline(deliveredAt: number, lastFaultAt: number, boundMs: number): number {
  return Math.max(deliveredAt, lastFaultAt) + boundMs;
}

/** What a session needs to know of the faults: the next kill, and when the latest fault ended. */
export type FaultClock = Pick<FaultPlayer, "nextKill" | "lastFaultAt">;

/** The run of `runId` ended (status terminal), or its deadline (runDeadline) passed (stuck). */
async function waitForRun(
  api: ChaosApiClient,
  sessionId: string,
  runId: string,
  boundMs: number,
  faults: FaultClock,
): Promise<RunOutcome> {
  const started = Date.now();
  let lastStatus = "unknown";
  while (Date.now() < runDeadline(started, faults.lastFaultAt(), boundMs)) {
    try {
      const answer = await api.get(`/v1/sessions/${sessionId}`);
      const run = answer.body?.run;
      if (answer.status === 200 && run?.runId === runId) {
        lastStatus = String(run.status);
        if (TERMINAL.has(run.status)) {
          return {
            kind: "ended",
            status: run.status,
            reason: String(run.endReason ?? ""),
            ms: Date.now() - started,
          };
        }
      } else if (answer.status === 200 && run?.runId !== undefined && run.runId !== runId) {
        // The API shows the session's current execution (Temporal's describe by workflow id), and
        // ours was created before this poll: another run id is a later run, followed to its end.
        const byRunId = String(run.runId);
        const ms = Date.now() - started;
        const next = await waitForRun(api, sessionId, byRunId, boundMs, faults);
        return { kind: "superseded", runId, byRunId, ms, next };
      } else {
        lastStatus = `HTTP ${answer.status}${run ? ` (latest run ${run.runId}: ${run.status})` : ""}`;
      }
    } catch (error) {
      if (!(error instanceof ApiGaveUpError)) throw error;
      lastStatus = describeError(error);
    }
    await sleep(POLL_INTERVAL_MS);
  }
  const now = Date.now();
  return {
    kind: "stuck",
    lastStatus,
    ms: now - started,
    sinceLastFaultMs: now - Math.max(started, faults.lastFaultAt()),
  };
}

/**
 * A budgeted session's limits: its budgets (a 0 one left out) and a pause timeout of 1 s, so a run
 * that pauses at its budget ends (completed, its end reason saying so) instead of waiting a day.
 */
function budgetLimits(budget: SessionBudget): Record<string, number> {
  return {
    ...(budget.maxCostUsd > 0 ? { maxCostUsd: budget.maxCostUsd } : {}),
    ...(budget.maxTokens > 0 ? { maxTokens: budget.maxTokens } : {}),
    pauseTimeoutSeconds: BUDGET_PAUSE_TIMEOUT_SECONDS,
  };
}

/**
 * Sends one message (Idempotency-Key = `key`); resolves with the run it started or reached and how
 * it was delivered, or undefined (recorded) when the API gave no 202.
 */
async function send(
  api: ChaosApiClient,
  record: SessionRecord,
  text: string,
  key: string,
  delivery: "auto" | "steer",
): Promise<{ runId: string; delivery: string } | undefined> {
  const sent: SentMessage = { text, idempotencyKey: key, confirmed: false, attempts: 0 };
  record.messages.push(sent);
  try {
    const answer = await api.post(
      `/v1/sessions/${record.plan.sessionId}/messages`,
      {
        text,
        delivery,
        model: "local-chat",
        tools: CHAOS_TOOLS,
        // A runner session's server runs on the runner that takes its calls.
        ...(record.plan.onRunner ? { environment: CHAOS_ENVIRONMENT } : {}),
        mcpServers: [everythingServer()],
        ...(record.plan.budget ? { limits: budgetLimits(record.plan.budget) } : {}),
      },
      key,
    );
    sent.attempts = answer.attempts;
    if (answer.status !== 202) {
      sent.error = `HTTP ${answer.status}: ${answer.text.slice(0, 300)}`;
      sent.refused = answer.status >= 400 && answer.status < 500;
      return undefined;
    }
    sent.confirmed = true;
    return { runId: String(answer.body.runId), delivery: String(answer.body.delivery) };
  } catch (error) {
    if (!(error instanceof ApiGaveUpError)) throw error;
    sent.error = describeError(error);
    return undefined;
  }
}

/** Plays `plan` against the API; resolves with what happened once its runs ended or stalled. */
export async function driveSession(
  api: ChaosApiClient,
  plan: SessionPlan,
  runBoundMs: number,
  faults: FaultClock,
): Promise<SessionRecord> {
  const record: SessionRecord = { plan, messages: [], runs: [] };
  const sessionId = plan.sessionId;
  /** Sends a message and waits for its run (plus `meanwhile`); a message that reached no run is recorded as such. */
  const deliverAndWait = async (text: string, key: string, meanwhile: Array<() => Promise<void>> = []) => {
    const delivered = await send(api, record, text, key, "auto");
    if (!delivered) {
      record.runs.push({ kind: "not_started", error: record.messages.at(-1)?.error ?? "no answer" });
      return;
    }
    const [outcome] = await Promise.all([
      waitForRun(api, sessionId, delivered.runId, runBoundMs, faults),
      ...meanwhile.map((work) => work()),
    ]);
    record.runs.push(outcome);
  };

  const abortLater = async () => {
    if (plan.abortAfterMs === undefined) return;
    await sleep(plan.abortAfterMs);
    if (plan.abortAfterKill) {
      await Promise.race([faults.nextKill(), sleep(KILL_WAIT_BOUND_MS)]);
      await sleep(ABORT_AFTER_KILL_MS);
    }
    try {
      const answer = await api.post(
        `/v1/sessions/${sessionId}/abort`,
        { reason: "chaos: aborted at a random moment" },
        `${sessionId}-abort`,
      );
      record.abort = {
        requested: answer.status === 202,
        answered: answer.status < 500,
        detail: `HTTP ${answer.status}`,
      };
    } catch (error) {
      if (!(error instanceof ApiGaveUpError)) throw error;
      record.abort = { requested: false, answered: false, detail: describeError(error) };
    }
  };
  /** A run the steer message started (the prompt's run had ended before it arrived). */
  let steerRunId: string | undefined;
  const steerLater = async () => {
    if (plan.steerAfterMs === undefined) return;
    await sleep(plan.steerAfterMs);
    const text = `Steer, a ${FOLLOW_UP_WORD} for ${sessionId}: read notes.md once more (message s).`;
    const delivered = await send(api, record, text, `${sessionId}-steer`, "steer");
    if (delivered?.delivery === "started") steerRunId = delivered.runId;
  };

  const prompt = `[scenario:${plan.scenario}] Keep notes in notes.md for ${sessionId} (message 1).`;
  await deliverAndWait(prompt, `${sessionId}-m1`, [abortLater, steerLater]);
  if (steerRunId !== undefined)
    record.runs.push(await waitForRun(api, sessionId, steerRunId, runBoundMs, faults));
  if (plan.abortAfterMs !== undefined) {
    const followUp = `${FOLLOW_UP_WORD} for ${sessionId}: read notes.md again (message 2).`;
    await deliverAndWait(followUp, `${sessionId}-m2`);
  }
  return record;
}
