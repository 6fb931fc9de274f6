/**
 * Runs through the cluster's one API address, as a client sees them: a scenario registered with
 * the local LLM server, a message posted (with an Idempotency-Key), the run followed to its end by
 * reading the session.
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario } from "../../src/providers/local-server";
import { apiUrl, llmUrl } from "./keel";

const TERMINAL = new Set(["completed", "aborted", "failed"]);
const POLL_INTERVAL_MS = 500;

/** Registers `scenario` under `name` with the cluster's LLM server (until it restarts). */
export async function registerScenario(name: string, scenario: Scenario): Promise<void> {
  const response = await fetch(`${llmUrl}/_scenarios`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ [name]: scenario }),
  });
  if (!response.ok)
    throw new Error(`registering scenario ${name}: HTTP ${response.status} ${await response.text()}`);
}

/**
 * Makes every request of `scenario` wait `latencyMs` before its first byte and stream at
 * `tokensPerSecond` (the LLM server's `slow` fault, on every matching request).
 */
export async function paceScenario(
  scenario: string,
  latencyMs: number,
  tokensPerSecond: number,
): Promise<void> {
  const response = await fetch(`${llmUrl}/_faults`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      faults: [{ kind: "slow", match: { scenario }, rate: 1, latencyMs, tokensPerSecond }],
    }),
  });
  if (!response.ok)
    throw new Error(`pacing scenario ${scenario}: HTTP ${response.status} ${await response.text()}`);
}

export interface Delivered {
  sessionId: string;
  runId: string;
}

/** Posts `text` to a new session (or `sessionId`); `body` adds run settings (environment, limits). */
export async function postMessage(
  apiKey: string,
  text: string,
  options: { sessionId?: string; body?: Record<string, unknown> } = {},
): Promise<Delivered> {
  const sessionId = options.sessionId ?? `s-${randomUUID().slice(0, 12)}`;
  const response = await fetch(`${apiUrl}/v1/sessions/${sessionId}/messages`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${apiKey}`,
      "content-type": "application/json",
      "idempotency-key": randomUUID(),
    },
    body: JSON.stringify({ text, delivery: "auto", model: "local-chat", ...options.body }),
    signal: AbortSignal.timeout(60_000),
  });
  const answer = (await response.json()) as { runId?: string };
  if (response.status !== 202 || !answer.runId) {
    throw new Error(`POST message: HTTP ${response.status} ${JSON.stringify(answer).slice(0, 300)}`);
  }
  return { sessionId, runId: answer.runId };
}

/** Reads the session until its run `runId` (or a later one) ended; resolves with its status and end reason. */
export async function waitForRunEnd(
  apiKey: string,
  delivered: Delivered,
  timeoutMs: number,
): Promise<{ status: string; reason: string }> {
  const deadline = Date.now() + timeoutMs;
  let last = "unknown";
  while (Date.now() < deadline) {
    const response = await fetch(`${apiUrl}/v1/sessions/${delivered.sessionId}`, {
      headers: { authorization: `Bearer ${apiKey}` },
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await response.json()) as { run?: { runId?: string; status?: string; endReason?: string } };
    last = `HTTP ${response.status} ${body.run?.status ?? ""}`;
    if (response.ok && body.run?.status && TERMINAL.has(body.run.status)) {
      return { status: body.run.status, reason: body.run.endReason ?? "" };
    }
    await sleep(POLL_INTERVAL_MS);
  }
  throw new Error(
    `run ${delivered.runId} of ${delivered.sessionId} did not end within ${timeoutMs} ms (last: ${last})`,
  );
}
