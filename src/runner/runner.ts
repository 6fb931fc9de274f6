/**
 * `keel runner`: runs the tool calls of one environment where it runs (a laptop, a CI job, a VM
 * inside a network), and its runs' MCP servers (listed and called here, in the session's folder
 * and sandbox). It holds only its runner token and the API's URL: it claims a call from the
 * API (long poll), runs it with the same tool code and sandbox as a worker, heartbeats while it
 * runs (the API relays them to the call's activity; an answer `cancel` or a lost claim aborts the
 * tool) and posts the output, which the API stores as the call's result.
 *
 * It takes up to `concurrency` calls at once (a run's parallel batch), with one claim long poll
 * open at a time. A runner that dies mid-call
 * stops heartbeating; the run's heartbeat timeout hands the call to another runner under the
 * usual replay rules (docs/architecture.md, "Environments").
 */
import { realpath } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_LIVE_EVENT_OPTIONS } from "../activities/live-events";
import { ApiError } from "../api-client/client";
import type { ClaimedCall, ClaimedToolCall, RunnerReport } from "../environments/calls";
import { type McpConnections, type McpSessionContext, messageOf } from "../mcp/connections";
import { callSessionTool, listSessionServers } from "../mcp/session-tools";
import { replayClassOf, tailOf } from "../tool-calls/lifecycle";
import { runToolCall } from "../tools";
import type { NetworkPolicy, SandboxConfig, SandboxPolicy } from "../tools/sandbox";
import type { ToolUpdate } from "../tools/types";
import type { Workspace } from "../tools/workspace";
import { sweepFolder } from "../tools/workspace-siblings";
import { SessionCopies, type WorkspaceOptions } from "./session-copies";
import { markStale, type StoreOutcome, storeWorkspace } from "./workspace-sync";

export interface RunnerOptions extends WorkspaceOptions {
  sandbox: SandboxConfig;
  /** Calls run at once (default 4). */
  concurrency?: number;
  /** How often a running call heartbeats (default 1 s; the run's heartbeat timeout is at most 8 s). */
  heartbeatMs?: number;
  /**
   * The runner's MCP clients: a run's stdio servers start here, in the session's workspace and
   * sandbox, and its HTTP servers are reached from here (KEEL_MCP_* read from this host's
   * environment). The runner says in its claims that it runs MCP, so the API hands it listings and
   * MCP calls (never to a runner of an earlier release, which could not run them).
   */
  mcp: McpConnections;
  /** Stop after this long with no call running and none claimed (a launched runner); default never. */
  idleExitMs?: number;
  signal?: AbortSignal;
}

/** Characters of live output one call sends at most (as an in-worker tool publishes per attempt). */
const LIVE_MAX_CHARS = DEFAULT_LIVE_EVENT_OPTIONS.maxChars;

/** Pause after a failed claim (API unreachable, 5xx) before the next. */
const RETRY_MS = 1_000;

/** Longest claim long poll (the API's limit). */
const CLAIM_WAIT_SECONDS = 20;

/**
 * Claims and runs calls until `signal` aborts (or, with `idleExitMs`, until idle that long).
 * Resolves then; rejects when the token is refused (401: revoked or wrong) or the environment is
 * not the token's (404).
 */
export async function runRunner(options: RunnerOptions): Promise<void> {
  const { client, environment, log, signal } = options;
  const limit = options.concurrency ?? 4;
  // One long poll at a time (each holds one of Temporal's long polls at the API), and only while a slot is free.
  const running = new Set<Promise<void>>();
  const copies = new SessionCopies();
  if (options.workspace === undefined) {
    // Half-restored copies a killed runner of this host left beside its sessions' folders.
    const swept = await sweepFolder(path.resolve(options.workspaceRoot));
    if (swept.length > 0) log({ msg: "removed copies left by a crash", paths: swept });
  }
  let activeAt = Date.now();
  while (!signal?.aborted) {
    if (running.size >= limit) {
      await Promise.race(running);
      continue;
    }
    let waitSeconds = CLAIM_WAIT_SECONDS;
    if (options.idleExitMs !== undefined && running.size === 0) {
      const idleLeft = activeAt + options.idleExitMs - Date.now();
      if (idleLeft <= 0) {
        log({ msg: "idle: runner stops", idleMs: options.idleExitMs });
        break;
      }
      waitSeconds = Math.min(CLAIM_WAIT_SECONDS, Math.ceil(idleLeft / 1000));
    }
    let call: ClaimedCall | undefined;
    try {
      const response = await client.response(
        client.api.v1.environments[":name"]["calls:claim"].$post(
          { param: { name: environment }, json: { waitSeconds, runs: ["mcp", "secrets"] } },
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
    activeAt = Date.now();
    const task: Promise<void> = runCall(options, call, copies).finally(() => {
      running.delete(task);
      activeAt = Date.now();
    });
    running.add(task);
  }
  await Promise.allSettled(running);
  // Pooled MCP server processes would outlive the runner's work until their idle close.
  await options.mcp.closeAll();
}

/** Runs one claimed call: heartbeats while it runs, aborts it when told to, posts its output. */
async function runCall(options: RunnerOptions, call: ClaimedCall, copies: SessionCopies): Promise<void> {
  const { client, environment, log } = options;
  const param = { name: environment, callId: call.callId };
  const tool = call.kind === "mcp-list" ? "(MCP listing)" : call.toolCall.name;
  log({ msg: "call claimed", callId: call.callId, tool, attempt: call.attempt });
  const abort = new AbortController();
  let lost = false;
  // The tool's output so far, sent with the next heartbeat when it changed (at most LIVE_MAX_CHARS in all).
  let partial: string | undefined;
  let liveChars = 0;
  const beat = async () => {
    const fresh = partial !== undefined && liveChars < LIVE_MAX_CHARS ? partial : undefined;
    partial = undefined;
    if (fresh !== undefined) liveChars += fresh.length;
    try {
      const answer = await client.json(
        client.api.v1.environments[":name"].calls[":callId"].heartbeat.$post({
          param,
          json: { claimId: call.claimId, ...(fresh !== undefined ? { partial: fresh } : {}) },
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
  let report: RunnerReport;
  try {
    report = await copies.whileWorking(options, call, async (workspace) => {
      const ran = await reportOf(options, call, workspace, abort.signal, (update) => {
        partial = tailOf(update);
      }).catch(
        // Never a crash of the runner for one call (a folder removed under it, say): the run reads why.
        (error: unknown) => cannotOpen(call, `The runner could not run this call: ${messageOf(error)}`),
      );
      if (!options.snapshots || workspace instanceof Error || call.kind !== "tool") return ran;
      if (!mayChangeWorkspace(call)) return ran;
      // The call went to another attempt: what it changed here is in no result, so this copy
      // must not be stored (by a later call) or worked on again.
      if (lost) {
        await copies.store(call.sessionId, () => markStale(workspace.dir));
        return ran;
      }
      // Before the result: a runner that dies after storing leaves the edits to the next one.
      const stored = await copies.store(call.sessionId, () =>
        storeWorkspace(client, environment, call.sessionId, workspace.dir),
      );
      if (stored.kind === "stored") return ran;
      log({ level: "warn", msg: "workspace not stored", callId: call.callId, reason: stored.reason });
      return withChangesNotKept(ran, stored);
    });
  } finally {
    clearInterval(timer);
  }
  if (lost) {
    log({ level: "warn", msg: "call lost to another attempt; its output is dropped", callId: call.callId });
    return;
  }
  let refusedOnce = false;
  for (let attempt = 1; ; attempt++) {
    try {
      await client.json(
        client.api.v1.environments[":name"].calls[":callId"].result.$post({
          param,
          json: { claimId: call.claimId, ...report },
        }),
      );
      log({
        msg: "call done",
        callId: call.callId,
        ...(report.output ? { isError: report.output.isError } : {}),
      });
      return;
    } catch (error) {
      // A report the API refuses (over its limits: too many blocks, too large) would leave the
      // call to time out and run again: a short one saying what happened is posted instead.
      if (error instanceof ApiError && (error.status === 400 || error.status === 413) && !refusedOnce) {
        refusedOnce = true;
        log({ level: "warn", msg: "result refused; posting why", callId: call.callId, error: String(error) });
        report = cannotOpen(
          call,
          `The call ran, but the API refused its result: ${error.message.slice(0, 500)}`,
        );
        continue;
      }
      const gone = error instanceof ApiError && error.status >= 400 && error.status < 500;
      if (gone || attempt >= 5) {
        log({ level: "warn", msg: "result not stored", callId: call.callId, error: String(error) });
        return;
      }
      await sleep(RETRY_MS * attempt);
    }
  }
}

/**
 * Runs the claimed call in its workspace (a listing's servers listed, a tool run: built-in or
 * MCP): the report, and the folder it acted on when it could be opened.
 */
async function reportOf(
  options: RunnerOptions,
  call: ClaimedCall,
  workspace: Workspace | Error,
  signal: AbortSignal,
  onUpdate: (update: ToolUpdate) => void,
): Promise<RunnerReport> {
  if (workspace instanceof Error)
    return cannotOpen(call, `The runner cannot open the workspace: ${workspace.message}`);
  // The call's tenant secrets, as its claim carried them: for this call only (dropped with it).
  const claimed = call.secrets ?? [];
  const sandbox: SandboxPolicy = {
    ...options.sandbox,
    network: (call.network as NetworkPolicy | undefined) ?? "none",
    ...(call.kind === "tool" && !call.mcp && (claimed.length > 0 || (call.missingSecrets?.length ?? 0) > 0)
      ? { secrets: claimed, missingSecrets: call.missingSecrets ?? [] }
      : {}),
  };
  if (call.kind === "mcp-list") {
    const session = await mcpSession(call, workspace, sandbox);
    return { mcpTools: await listSessionServers(options.mcp, session, call.servers) };
  }
  if (!call.mcp)
    return { output: await runToolCall(call.toolCall, { workspace, sandbox, signal, onUpdate }) };
  const session = await mcpSession(call, workspace, sandbox);
  const output = await callSessionTool(
    options.mcp,
    session,
    call.mcp,
    call.toolCall.arguments,
    signal,
    onUpdate,
  );
  const server = call.mcp.server.name;
  const changed = options.mcp.changedServers(session).filter((name) => name === server);
  // Reported once: the run lists the server again (maybe on another runner, whose server process
  // has its own state), and this runner does not report it with every later call.
  if (changed.length > 0) options.mcp.markListed(session, call.mcp.server);
  return { output, ...(changed.length > 0 ? { mcpToolsChanged: changed } : {}) };
}

/** Whether the call's tool may change files (read-only tools are `safe` to replay). */
const mayChangeWorkspace = (call: ClaimedToolCall) =>
  replayClassOf({ toolName: call.toolCall.name, ...(call.mcp ? { mcp: call.mcp } : {}) }) !== "safe";

/** The report of a call that could not start: an error result, or every server of a listing unavailable. */
function cannotOpen(call: ClaimedCall, text: string): RunnerReport {
  if (call.kind === "mcp-list")
    return {
      mcpTools: call.servers.map((server) => ({ server: server.name, status: "unavailable", error: text })),
    };
  return { output: { content: [{ type: "text", text }], isError: true } };
}

/** Where a session's MCP servers run on this runner: its workspace, the run's sandbox. */
async function mcpSession(
  call: ClaimedCall,
  workspace: Workspace,
  sandbox: SandboxPolicy,
): Promise<McpSessionContext> {
  const claimed = call.secrets ?? [];
  return {
    sessionKey: call.sessionId,
    workspaceDir: await realpath(workspace.dir),
    sandbox,
    // The secrets the API read for this claim (a server naming others finds them missing).
    secrets: async (names) => ({
      secrets: claimed.filter((secret) => names.includes(secret.name)),
      missing: names.filter((name) => !claimed.some((secret) => secret.name === name)),
    }),
  };
}

/**
 * The result of a call whose workspace changes were not stored: an error whose last block says so,
 * so the model never takes an edit for kept when it was not.
 */
function withChangesNotKept(report: RunnerReport, stored: StoreOutcome & { kind: "not-kept" }): RunnerReport {
  if (!report.output) return report;
  const text =
    `The files this call changed were not kept: ${stored.reason}. ` +
    "The next call starts from the workspace as it was last stored; make the changes again if they are still needed.";
  return {
    ...report,
    output: { ...report.output, isError: true, content: [...report.output.content, { type: "text", text }] },
  };
}
