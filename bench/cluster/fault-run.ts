/**
 * The cluster losing its parts while sessions go on: sessions of the ramp's shape run through the
 * API address (the chaos suite's careful client: every POST retried with its Idempotency-Key through
 * 5xx and refused connections) while one history process, one matching process, PostgreSQL (a
 * restart), one SeaweedFS volume server and one API process are SIGKILLed (PostgreSQL: stopped) and
 * started again, one after another. Then every session is checked with the chaos suite's checks
 * (test/chaos/checks.ts): its stored entries are intact (no seq gap, parent chain, every tool call
 * answered once), its message is stored exactly once, and its run completed — nothing stuck.
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "@temporalio/client";
import { runWorkflowId } from "../../src/contracts/runs";
import { createS3Client } from "../../src/store/s3-config";
import { SessionStore } from "../../src/store/session-store";
import { ChaosApiClient } from "../../test/chaos/api-client";
import { checkDeliveries, checkStoredSession, type Violation } from "../../test/chaos/checks";
import { apiUrl } from "./keel";
import { TENANT_KEYS } from "./layout";
import { RAMP_WORKLOAD } from "./load-step";
import type { ClusterPart } from "./parts";
import { clusterS3Settings } from "./seaweedfs";

const LOAD_TENANT = "load";
/** How long one API call keeps retrying through an outage. */
const API_CALL_BOUND_MS = 90_000;
/** A run not over this long after the last fault is stuck. */
const RUN_BOUND_AFTER_LAST_FAULT_MS = 180_000;
const DOWN_MS = 8_000;
const BETWEEN_FAULTS_MS = 15_000;

export interface FaultRecord {
  part: string;
  how: "SIGKILL" | "restart";
  atSecond: number;
  /** How long until it was healthy again. */
  backAfterMs: number;
  error?: string;
}

export interface FaultRunResult {
  concurrency: number;
  durationMs: number;
  faults: FaultRecord[];
  sessions: number;
  completed: number;
  violations: Violation[];
}

interface FaultSession {
  sessionId: string;
  text: string;
  idempotencyKey: string;
  confirmed: boolean;
  attempts: number;
  error?: string;
  outcome: string;
}

/** The faults, in order: which part and whether it is SIGKILLed or stopped (PostgreSQL: a restart). */
const FAULT_PLAN: Array<{ part: string; how: FaultRecord["how"] }> = [
  { part: "history-1", how: "SIGKILL" },
  { part: "matching-1", how: "SIGKILL" },
  { part: "postgres", how: "restart" },
  { part: "seaweedfs-volume-1", how: "SIGKILL" },
  { part: "api-1", how: "SIGKILL" },
];

async function playFault(
  part: ClusterPart,
  how: FaultRecord["how"],
  startedAt: number,
): Promise<FaultRecord> {
  const atSecond = Math.round((Date.now() - startedAt) / 1000);
  const began = Date.now();
  try {
    if (how === "SIGKILL") await part.current().kill();
    else await part.current().stop();
    await sleep(DOWN_MS);
    await part.restart();
    return { part: part.name, how, atSecond, backAfterMs: Date.now() - began };
  } catch (error) {
    return {
      part: part.name,
      how,
      atSecond,
      backAfterMs: Date.now() - began,
      error: error instanceof Error ? error.message : String(error),
    };
  }
}

async function driveSession(
  api: ChaosApiClient,
  client: Client,
  lastFaultAt: () => number,
): Promise<FaultSession> {
  const sessionId = `f-${randomUUID().slice(0, 12)}`;
  const session: FaultSession = {
    sessionId,
    text: `[scenario:${RAMP_WORKLOAD.scenario}] look around the workspace (${sessionId})`,
    idempotencyKey: `${sessionId}-m1`,
    confirmed: false,
    attempts: 0,
    outcome: "not started",
  };
  try {
    const answer = await api.post(
      `/v1/sessions/${sessionId}/messages`,
      { text: session.text, delivery: "auto", model: "local-chat" },
      session.idempotencyKey,
    );
    session.attempts = answer.attempts;
    if (answer.status !== 202) {
      session.error = `HTTP ${answer.status}: ${answer.text.slice(0, 300)}`;
      return session;
    }
    session.confirmed = true;
    const handle = client.workflow.getHandle(runWorkflowId({ tenantId: LOAD_TENANT, sessionId }));
    const result = (await Promise.race([
      handle.result(),
      (async () => {
        while (Date.now() < lastFaultAt() + RUN_BOUND_AFTER_LAST_FAULT_MS) await sleep(1_000);
        throw new Error("stuck: not over 180 s after the last fault");
      })(),
    ])) as { status?: string; reason?: string };
    session.outcome =
      result.status === "completed" ? "completed" : `${result.status}: ${result.reason ?? ""}`;
  } catch (error) {
    session.error = error instanceof Error ? error.message : String(error);
    session.outcome = "error";
  }
  return session;
}

/** Runs `concurrency` lanes of sessions while the faults play, then checks every session. */
export async function runFaults(options: {
  client: Client;
  parts: ClusterPart[];
  concurrency: number;
  say: (line: string) => void;
}): Promise<FaultRunResult> {
  const { client, parts, concurrency, say } = options;
  const api = new ChaosApiClient(apiUrl, TENANT_KEYS.load, API_CALL_BOUND_MS);
  const startedAt = Date.now();
  let lastFaultAt = Date.now();
  let faultsOver = false;
  const sessions: FaultSession[] = [];
  const lane = async () => {
    while (!faultsOver) sessions.push(await driveSession(api, client, () => lastFaultAt));
  };
  const faults = (async () => {
    const records: FaultRecord[] = [];
    for (const { part, how } of FAULT_PLAN) {
      await sleep(BETWEEN_FAULTS_MS);
      const target = parts.find((candidate) => candidate.name === part);
      if (!target) throw new Error(`no cluster part ${part}`);
      const record = await playFault(target, how, startedAt);
      lastFaultAt = Date.now();
      say(
        `  fault: ${how} ${part} at ${record.atSecond} s, back after ${(record.backAfterMs / 1000).toFixed(1)} s${record.error ? ` (${record.error})` : ""}`,
      );
      records.push(record);
    }
    await sleep(BETWEEN_FAULTS_MS);
    faultsOver = true;
    return records;
  })();
  const [records] = await Promise.all([faults, ...Array.from({ length: concurrency }, lane)]);
  const durationMs = Date.now() - startedAt;

  const s3Client = createS3Client(clusterS3Settings);
  const store = new SessionStore(s3Client, clusterS3Settings);
  const violations: Violation[] = [];
  try {
    for (const session of sessions) {
      const { sessionId } = session;
      if (session.outcome !== "completed") {
        violations.push({
          sessionId,
          kind: "run_not_completed",
          detail: `${session.outcome}${session.error ? `: ${session.error}` : ""}`,
        });
      }
      if (!session.confirmed) {
        violations.push(...checkDeliveries(sessionId, [], [{ ...session, refused: false }]));
        continue;
      }
      const stored = await store.readEntries({ tenantId: LOAD_TENANT, sessionId });
      violations.push(...checkStoredSession(sessionId, stored));
      violations.push(
        ...checkDeliveries(
          sessionId,
          stored.entries.map(({ entry }) => entry),
          [
            {
              text: session.text,
              idempotencyKey: session.idempotencyKey,
              confirmed: true,
              attempts: session.attempts,
            },
          ],
        ),
      );
    }
  } finally {
    s3Client.destroy();
  }
  return {
    concurrency,
    durationMs,
    faults: records,
    sessions: sessions.length,
    completed: sessions.filter((session) => session.outcome === "completed").length,
    violations,
  };
}
