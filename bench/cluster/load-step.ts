/**
 * One step of the cluster ramp: `concurrency` lanes, each starting a new session through the API
 * address as soon as its previous one ended, for `durationMs` (a session under way when the time
 * is up is finished, not abandoned); then what the step cost, read around it: CPU per process
 * kind, Temporal's `action` counter, S3 requests by kind (a counting proxy in front of the S3
 * gateway), the model's own time (the local LLM server's journal) and, from a sample of sessions'
 * histories, billable Actions and history bytes.
 */
import type { Client } from "@temporalio/client";
import { runWorkflowId } from "../../src/contracts/runs";
import type { CountingProxy } from "../support/counting-proxy";
import { encodedBytes, fetchExecutionChain } from "../support/history";
import {
  busySeconds,
  busyShare,
  cpuSeconds,
  machineCpu,
  procStatusBytes,
  treeCpuSeconds,
} from "../support/proc-stats";
import {
  type ActionCounts,
  countsSince,
  historyActions,
  serverActions,
  sumCounts,
  totalOf,
} from "../support/temporal-actions";
import { type Delivered, postMessage } from "./api-runs";
import { llmUrl } from "./keel";
import { TEMPORAL_FRONTEND_METRICS_URL, TEMPORAL_NAMESPACE, TENANT_KEYS } from "./layout";
import type { ClusterPart, PartKind } from "./parts";

/** What each session of a step does: one message whose scenario takes `turns` model turns. */
export interface Workload {
  scenario: string;
  turns: number;
  /** Added to the message body (run limits for long sessions). */
  body?: Record<string, unknown>;
}

/** The ramp's session: model turns with 1, 2 and 0 tool calls (the last turn answers). */
export const RAMP_TOOL_CALLS = [1, 2, 0];
export const RAMP_WORKLOAD: Workload = { scenario: "cluster-load", turns: RAMP_TOOL_CALLS.length };
const LOAD_TENANT = "load";
/** Sessions whose histories are read per step (reading all would load the cluster being measured). */
const HISTORY_SAMPLE = 8;
const SESSION_TIMEOUT_MS = 900_000;

const words = (count: number, topic: string) =>
  Array.from({ length: count }, (_, index) => `${topic}${index % 7 === 6 ? "." : ""}`).join(" ");

const toolTurn = (calls: number) => ({
  text: words(20, "checking"),
  toolCalls: Array.from({ length: calls }, () => ({ name: "ls", arguments: { path: "." } })),
});
const answerTurn = { text: words(60, "done") };

/** A scenario whose turns make `toolCalls[i]` `ls` calls each and answer (streamed text) at a 0. */
export function scenarioOf(toolCalls: number[]) {
  return {
    turns: toolCalls.map((calls) => (calls > 0 ? toolTurn(calls) : answerTurn)),
    after: { text: "Done." },
  };
}

/** A session of `turns` model turns: one `ls` call each, then the answer; limits above its length. */
export function lengthWorkload(turns: number): { workload: Workload; toolCalls: number[] } {
  const toolCalls = [...Array.from({ length: turns - 1 }, () => 1), 0];
  return {
    toolCalls,
    workload: {
      scenario: `cluster-length-${turns}`,
      turns,
      body: { limits: { maxTurns: turns + 10, maxToolCalls: turns + 10 } },
    },
  };
}

export interface SessionResult {
  sessionId: string;
  ok: boolean;
  error?: string;
  wallMs: number;
}

export interface StepResult {
  scenario: string;
  turnsPerSession: number;
  concurrency: number;
  durationMs: number;
  /** True when the stop time cut the step short. */
  cutShort: boolean;
  sessions: SessionResult[];
  completedTurns: number;
  turnsPerSecond: number;
  errors: number;
  /** Mean model time per model call (first byte wait + streaming), from the LLM server's journal. */
  modelMsPerCall: number;
  modelCalls: number;
  /** Per completed session: (wall − its turns × modelMsPerCall) / turns. */
  addedMsPerTurn: { p50: number; p95: number; mean: number };
  /** Temporal's `action` counter (frontend), per turn, by action type. */
  serverActionsPerTurn: number;
  serverActionsByType: ActionCounts;
  /** From the sampled histories: billable Actions per turn by category, and encoded bytes per turn. */
  historyActionsPerTurn: number;
  historyActionsByCategory: ActionCounts;
  historyBytesPerTurn: number;
  s3PerTurn: Record<string, number>;
  /** S3 requests per turn by kind and key area (what each request was for). */
  s3PerTurnByArea: Record<string, number>;
  cpuSecondsPerTurn: Partial<Record<PartKind, number>>;
  cpuSecondsTotal: Partial<Record<PartKind, number>>;
  machineBusyShare: number;
  /** Busy share of the machine not used by the cluster or this benchmark process (other work, steal). */
  othersShare: number;
  /** Resident memory of each part's process at the step's end, MB (PostgreSQL left out: runuser's process, not its backends). */
  rssMbByPart: Record<string, number>;
}

/** Resident set of each part's process, MB. */
function residentMb(parts: ClusterPart[]): Record<string, number> {
  const byPart: Record<string, number> = {};
  for (const part of parts) {
    if (part.kind === "postgres") continue;
    try {
      byPart[part.name] = Math.round(procStatusBytes(part.current().pid, "VmRSS") / 1024 ** 2);
    } catch {
      // the process is gone (a fault): no reading
    }
  }
  return byPart;
}

function percentile(values: number[], share: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] as number;
}

function cpuByKind(parts: ClusterPart[]): Partial<Record<PartKind, number>> {
  const byKind: Partial<Record<PartKind, number>> = {};
  for (const part of parts) byKind[part.kind] = (byKind[part.kind] ?? 0) + treeCpuSeconds(part.current().pid);
  return byKind;
}

interface JournalEntry {
  time: string;
  scenario: string;
  outcome: string;
  deltaSentAt?: number[];
}

/** Model calls of `scenario` since `sinceMs` and their mean own time. */
async function modelTime(scenario: string, sinceMs: number): Promise<{ calls: number; meanMs: number }> {
  const response = await fetch(`${llmUrl}/_journal`);
  const { entries } = (await response.json()) as { entries: JournalEntry[] };
  const times = entries
    .filter((entry) => entry.scenario === scenario && entry.outcome === "completed")
    .map((entry) => ({ at: Date.parse(entry.time), last: entry.deltaSentAt?.at(-1) }))
    .filter((entry) => entry.at >= sinceMs && entry.last !== undefined)
    .map((entry) => (entry.last as number) - entry.at);
  const sum = times.reduce((total, value) => total + value, 0);
  return { calls: times.length, meanMs: times.length ? sum / times.length : Number.NaN };
}

async function driveSession(
  client: Client,
  workload: Workload,
): Promise<SessionResult & { delivered?: Delivered }> {
  const started = performance.now();
  let delivered: Delivered | undefined;
  try {
    delivered = await postMessage(
      TENANT_KEYS.load,
      `[scenario:${workload.scenario}] look around the workspace`,
      {
        ...(workload.body ? { body: workload.body } : {}),
      },
    );
    const handle = client.workflow.getHandle(
      runWorkflowId({ tenantId: LOAD_TENANT, sessionId: delivered.sessionId }),
    );
    const result = (await Promise.race([
      handle.result(),
      new Promise((_, fail) =>
        setTimeout(() => fail(new Error("session timed out")), SESSION_TIMEOUT_MS).unref(),
      ),
    ])) as { status?: string; reason?: string };
    const ok = result.status === "completed";
    return {
      sessionId: delivered.sessionId,
      ok,
      ...(ok ? {} : { error: `run ended ${result.status}: ${result.reason ?? ""}` }),
      wallMs: performance.now() - started,
      delivered,
    };
  } catch (error) {
    return {
      sessionId: delivered?.sessionId ?? "(not started)",
      ok: false,
      error: error instanceof Error ? error.message : String(error),
      wallMs: performance.now() - started,
    };
  }
}

/** Billable Actions and encoded bytes of a sample of the step's completed sessions. */
async function sampleHistories(client: Client, sessions: SessionResult[], turnsPerSession: number) {
  const sample = sessions.filter((session) => session.ok).slice(0, HISTORY_SAMPLE);
  const actions: ActionCounts[] = [];
  let bytes = 0;
  for (const session of sample) {
    const chain = await fetchExecutionChain(
      client,
      runWorkflowId({ tenantId: LOAD_TENANT, sessionId: session.sessionId }),
    );
    for (const events of chain) {
      actions.push(historyActions(events));
      bytes += encodedBytes(events);
    }
  }
  const turns = sample.length * turnsPerSession;
  const byCategory = Object.fromEntries(
    Object.entries(sumCounts(actions)).map(([key, value]) => [key, value / Math.max(1, turns)]),
  );
  return { byCategory, perTurn: totalOf(byCategory), bytesPerTurn: bytes / Math.max(1, turns) };
}

export async function runStep(options: {
  client: Client;
  parts: ClusterPart[];
  s3: CountingProxy;
  workload: Workload;
  concurrency: number;
  /** Lanes start new sessions until then (the closed loop of the ramp)… */
  durationMs: number;
  /** …or each lane runs exactly this many sessions (the length series). */
  sessionsPerLane?: number;
  /** No session starts after this (epoch ms): the time budget. */
  stopAt: number;
}): Promise<StepResult> {
  const { client, parts, s3, concurrency, workload } = options;
  const turnsPerSession = workload.turns;
  const actionsBefore = await serverActions(TEMPORAL_FRONTEND_METRICS_URL, TEMPORAL_NAMESPACE);
  s3.reset();
  const cpuBefore = cpuByKind(parts);
  const ownBefore = cpuSeconds(process.pid);
  const machineBefore = machineCpu();
  const startedAt = Date.now();
  const endAt = Math.min(startedAt + options.durationMs, options.stopAt);
  const sessions: SessionResult[] = [];
  const lane = async () => {
    for (let count = 0; ; count++) {
      const more =
        options.sessionsPerLane === undefined ? Date.now() < endAt : count < options.sessionsPerLane;
      if (!more || Date.now() >= options.stopAt) return;
      sessions.push(await driveSession(client, workload));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  const elapsedMs = Date.now() - startedAt;
  const machineAfter = machineCpu();
  const cpuAfter = cpuByKind(parts);
  const ownSeconds = cpuSeconds(process.pid) - ownBefore;
  const rssMbByPart = residentMb(parts);
  const s3Counts = s3.counts();
  const s3ByArea = s3.countsByArea();
  const actionsAfter = await serverActions(TEMPORAL_FRONTEND_METRICS_URL, TEMPORAL_NAMESPACE);
  const model = await modelTime(workload.scenario, startedAt);
  const completed = sessions.filter((session) => session.ok);
  const turns = completed.length * turnsPerSession;
  const added = completed.map(
    (session) => (session.wallMs - turnsPerSession * model.meanMs) / turnsPerSession,
  );
  const serverActionsByType = countsSince(actionsBefore, actionsAfter);
  const histories = await sampleHistories(client, completed, turnsPerSession);
  const cpuTotal: Partial<Record<PartKind, number>> = {};
  for (const kind of Object.keys(cpuAfter) as PartKind[])
    cpuTotal[kind] = (cpuAfter[kind] ?? 0) - (cpuBefore[kind] ?? 0);
  const perTurn = (value: number) => value / Math.max(1, turns);
  const clusterSeconds = Object.values(cpuTotal).reduce((sum, seconds) => sum + (seconds ?? 0), 0);
  const machineSeconds = machineAfter.total - machineBefore.total;
  return {
    scenario: workload.scenario,
    turnsPerSession,
    concurrency,
    durationMs: elapsedMs,
    cutShort:
      Date.now() >= options.stopAt &&
      (options.sessionsPerLane !== undefined || endAt < startedAt + options.durationMs),
    sessions,
    completedTurns: turns,
    turnsPerSecond: turns / (elapsedMs / 1000),
    errors: sessions.length - completed.length,
    modelMsPerCall: model.meanMs,
    modelCalls: model.calls,
    addedMsPerTurn: {
      p50: percentile(added, 0.5),
      p95: percentile(added, 0.95),
      mean: added.reduce((sum, value) => sum + value, 0) / Math.max(1, added.length),
    },
    serverActionsPerTurn: perTurn(totalOf(serverActionsByType)),
    serverActionsByType,
    historyActionsPerTurn: histories.perTurn,
    historyActionsByCategory: histories.byCategory,
    historyBytesPerTurn: histories.bytesPerTurn,
    s3PerTurn: Object.fromEntries(
      Object.entries(s3Counts).map(([kind, tally]) => [kind, perTurn(tally.count)]),
    ),
    s3PerTurnByArea: Object.fromEntries(
      Object.entries(s3ByArea).map(([area, count]) => [area, perTurn(count)]),
    ),
    cpuSecondsPerTurn: Object.fromEntries(
      Object.entries(cpuTotal).map(([kind, seconds]) => [kind, perTurn(seconds)]),
    ),
    cpuSecondsTotal: cpuTotal,
    machineBusyShare: busyShare(machineBefore, machineAfter),
    othersShare:
      machineSeconds > 0
        ? Math.max(0, busySeconds(machineBefore, machineAfter) - clusterSeconds - ownSeconds) / machineSeconds
        : 0,
    rssMbByPart,
  };
}
