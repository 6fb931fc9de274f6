/**
 * `keel runner`: runs the tool calls of one environment where it runs (a laptop, a CI job, a VM
 * inside a network). It holds only its runner token and the API's URL: it claims a call from the
 * API (long poll), runs it with the same tool code and sandbox as a worker, heartbeats while it
 * runs (the API relays them to the call's activity; an answer `cancel` or a lost claim aborts the
 * tool) and posts the output, which the API stores as the call's result.
 *
 * It takes up to `concurrency` calls at once (a run's parallel batch), with one claim long poll
 * open at a time. A runner that dies mid-call
 * stops heartbeating; the run's heartbeat timeout hands the call to another runner under the
 * usual replay rules (docs/architecture.md, "Environments").
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { ApiClient } from "../cli/client";
import { ApiError } from "../cli/client";
import type { ClaimedCall } from "../environments/calls";
import { ID_PATTERN } from "../store/session-keys";
import { prepareWorkspace, runToolCall } from "../tools";
import type { NetworkPolicy, SandboxConfig } from "../tools/sandbox";
import type { ToolOutput } from "../tools/types";
import type { Workspace } from "../tools/workspace";

export interface RunnerOptions {
  client: ApiClient;
  environment: string;
  /** One directory every call acts on (an existing checkout); else one per session under `workspaceRoot`. */
  workspace?: string;
  workspaceRoot: string;
  sandbox: SandboxConfig;
  /** Calls run at once (default 4). */
  concurrency?: number;
  /** How often a running call heartbeats (default 1 s; the run's heartbeat timeout is at most 8 s). */
  heartbeatMs?: number;
  log: (record: Record<string, unknown>) => void;
  signal?: AbortSignal;
}

/** Pause after a failed claim (API unreachable, 5xx) before the next. */
const RETRY_MS = 1_000;

/**
 * Claims and runs calls until `signal` aborts. Resolves then; rejects when the token is refused
 * (401: revoked or wrong) or the environment is not the token's (404).
 */
export async function runRunner(options: RunnerOptions): Promise<void> {
  const { client, environment, log, signal } = options;
  const limit = options.concurrency ?? 4;
  // One long poll at a time (each costs the API S3 lists), and only while a slot is free.
  const running = new Set<Promise<void>>();
  while (!signal?.aborted) {
    if (running.size >= limit) {
      await Promise.race(running);
      continue;
    }
    let call: ClaimedCall | undefined;
    try {
      const response = await client.response(
        client.api.v1.environments[":name"]["calls:claim"].$post(
          { param: { name: environment }, json: { waitSeconds: 20 } },
          { init: signal ? { signal } : {} },
        ),
      );
      call = response.status === 200 ? ((await response.json()) as ClaimedCall) : undefined;
    } catch (error) {
      if (signal?.aborted) break;
      if (error instanceof ApiError && (error.status === 401 || error.status === 404)) {
        await Promise.allSettled(running);
        throw error;
      }
      log({ level: "warn", msg: "claim failed; retrying", error: String(error) });
      await sleep(RETRY_MS);
      continue;
    }
    if (!call) continue;
    const task: Promise<void> = runCall(options, call).finally(() => running.delete(task));
    running.add(task);
  }
  await Promise.allSettled(running);
}

/** Runs one claimed call: heartbeats while it runs, aborts it when told to, posts its output. */
async function runCall(options: RunnerOptions, call: ClaimedCall): Promise<void> {
  const { client, environment, log } = options;
  const param = { name: environment, callId: call.callId };
  log({ msg: "call claimed", callId: call.callId, tool: call.toolCall.name, attempt: call.attempt });
  const abort = new AbortController();
  let lost = false;
  const beat = async () => {
    try {
      const answer = await client.json(
        client.api.v1.environments[":name"].calls[":callId"].heartbeat.$post({
          param,
          json: { claimId: call.claimId },
        }),
      );
      if (answer.cancel && !abort.signal.aborted) {
        log({ msg: "call cancelled by the run", callId: call.callId });
        abort.abort();
      }
    } catch (error) {
      if (error instanceof ApiError && (error.status === 404 || error.status === 401)) {
        // The claim is not ours any more (the call timed out and went to another runner).
        lost = true;
        abort.abort();
      }
    }
  };
  const timer = setInterval(() => void beat(), options.heartbeatMs ?? 1_000);
  let output: ToolOutput;
  try {
    const workspace = await workspaceOf(options, call.sessionId).catch((error: unknown) => error as Error);
    output =
      workspace instanceof Error
        ? {
            content: [{ type: "text", text: `The runner cannot open the workspace: ${workspace.message}` }],
            isError: true,
          }
        : await runToolCall(call.toolCall, {
            workspace,
            sandbox: { ...options.sandbox, network: (call.network as NetworkPolicy | undefined) ?? "none" },
            signal: abort.signal,
          });
  } finally {
    clearInterval(timer);
  }
  if (lost) {
    log({ level: "warn", msg: "call lost to another attempt; its output is dropped", callId: call.callId });
    return;
  }
  for (let attempt = 1; ; attempt++) {
    try {
      await client.json(
        client.api.v1.environments[":name"].calls[":callId"].result.$post({
          param,
          json: { claimId: call.claimId, output },
        }),
      );
      log({ msg: "call done", callId: call.callId, isError: output.isError });
      return;
    } catch (error) {
      const gone = error instanceof ApiError && error.status >= 400 && error.status < 500;
      if (gone || attempt >= 5) {
        log({ level: "warn", msg: "result not stored", callId: call.callId, error: String(error) });
        return;
      }
      await sleep(RETRY_MS * attempt);
    }
  }
}

/** The directory a call acts on: `--workspace`, or the session's own folder under the root. */
async function workspaceOf(options: RunnerOptions, sessionId: string): Promise<Workspace> {
  if (options.workspace !== undefined) return { dir: path.resolve(options.workspace) };
  if (!ID_PATTERN.test(sessionId)) throw new Error(`invalid session id ${JSON.stringify(sessionId)}`);
  await mkdir(options.workspaceRoot, { recursive: true });
  const workspace = { dir: path.join(path.resolve(options.workspaceRoot), sessionId) };
  await prepareWorkspace(workspace);
  return workspace;
}
