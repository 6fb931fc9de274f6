/**
 * The API's side of runner environments: a runner claims a waiting call, reports heartbeats and
 * posts the result. The activity that waits for the call (activities/runner-tool.ts) is completed
 * here, by its task token, after the result is stored at the slot the workflow assigned.
 *
 * Replay rules as for in-worker tools: a result already stored is adopted; an `unsafe` call (bash)
 * writes its start marker when claimed, and a later attempt that finds it gets an unknown-outcome
 * result instead of a second run.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import {
  ActivityCancelledError,
  ActivityNotFoundError,
  type AsyncCompletionClient,
} from "@temporalio/client";
import { resultOf, summarize, withApprovedEdit } from "../activities/execute-tool";
import type { ExecuteToolResult } from "../activities/types";
import type { LiveEvent } from "../core/events";
import { UNKNOWN_OUTCOME_TEXT } from "../core/markers";
import { createMessageEntry } from "../core/session-entries";
import { offeredToModel } from "../mcp/tool-names";
import type { McpServerListing, McpServerSettings, McpToolList } from "../mcp/types";
import type { McpToolListings } from "../store/mcp-tool-listings";
import type { SessionStore } from "../store/session-store";
import type { ToolCallMarkers } from "../store/tool-call-markers";
import { toolNamed, toToolResultMessage } from "../tools";
import type { ReplayClass, ToolOutput } from "../tools/types";
import {
  type EnvironmentStore,
  type McpListingCall,
  RUNNER_CALL_ID,
  type RunnerCall,
  type RunnerToolCall,
} from "./store";

interface ClaimedCommon {
  callId: string;
  claimId: string;
  attempt: number;
  sessionId: string;
  network?: unknown;
  /** The session whose workspace this session's starts from (a sub-agent's parent). */
  forkOf?: string;
}

/** A tool call a runner claimed: enough to run it, and the claim that proves it holds it. */
export interface ClaimedToolCall extends ClaimedCommon {
  kind: "tool";
  toolCall: { id: string; name: string; arguments: Record<string, unknown> };
  /** An MCP tool: called on `server` (started or reached by the runner) as `tool`. */
  mcp?: { server: McpServerSettings; tool: string; replay: ReplayClass };
}

/** A run's MCP servers a runner claimed to list (the run's tools are what it answers). */
export interface ClaimedListing extends ClaimedCommon {
  kind: "mcp-list";
  servers: McpServerSettings[];
}

/** What a runner receives for a claim. */
export type ClaimedCall = ClaimedToolCall | ClaimedListing;

/** Activity heartbeats and completions by task token (Temporal's AsyncCompletionClient). */
export type ActivityCompletion = Pick<AsyncCompletionClient, "heartbeat" | "complete">;

export interface RunnerCallDeps {
  environments: EnvironmentStore;
  store: SessionStore;
  markers: ToolCallMarkers;
  completion: () => Promise<ActivityCompletion>;
  /** Where a runner's MCP listings are stored by digest (absent: the run's history carries them). */
  mcpListings?: Pick<McpToolListings, "put">;
  /** Publishes a live event to the run of the call's session (best effort: a failure is dropped). */
  publishLive?: (call: RunnerCall, event: LiveEvent) => Promise<void>;
  now: () => number;
}

/**
 * How a long-polling claim learns of a new call: it reads the environment's doorbell (rewritten
 * with every call, naming it) every DOORBELL_POLL_MS; when it changed, it tries the call it names
 * first and lists the calls only when that one is not to be had. It lists at least every
 * CLAIM_POLL_MS (a ring that failed, a call left by a dead runner's claim).
 *
 * An environment whose doorbell rang within the last BUSY_WINDOW_MS is in the middle of a run,
 * whose next call follows a model turn: its claims read the doorbell every BUSY_DOORBELL_POLL_MS,
 * so the wait for a ring, the largest step of a hand-off, shrinks (docs/environments.md,
 * "Measured"). The ring's time is in the doorbell itself, so every API process (a Lambda's
 * instances too) keeps the same pace. An idle environment's polls cost what they did; its first
 * call waits up to the idle interval.
 */
const DOORBELL_POLL_MS = 50;
const BUSY_DOORBELL_POLL_MS = 10;
const BUSY_WINDOW_MS = 30_000;
const CLAIM_POLL_MS = 5_000;

/** How long a claim sleeps between doorbell reads, given the last ring (written by another machine's clock). */
export function doorbellPollMs(rung: { at: number } | undefined, now: number): number {
  return rung !== undefined && Math.abs(now - rung.at) < BUSY_WINDOW_MS
    ? BUSY_DOORBELL_POLL_MS
    : DOORBELL_POLL_MS;
}

/**
 * Claims the oldest waiting call of the environment (of one session, with `sessionId`), waiting up to `waitMs` for one. Undefined
 * when none came. Calls that must not run again are answered here and never handed out.
 */
export async function claimCall(
  deps: RunnerCallDeps,
  tenantId: string,
  environment: string,
  waitMs: number,
  options: {
    signal?: AbortSignal;
    stillAuthorized?: () => Promise<boolean>;
    /** A launched runner's token: that session's calls only. */
    sessionId?: string;
    /**
     * The runner runs MCP servers (it said so in its claim): listings and MCP calls are handed to
     * it. A runner of an earlier release does not say so, and never gets a call it cannot run.
     */
    mcp?: boolean;
  } = {},
): Promise<ClaimedCall | undefined> {
  const deadline = deps.now() + waitMs;
  const mine = (callId: string) =>
    options.sessionId === undefined || callId.startsWith(`${options.sessionId}.`);
  // Read before listing: a call put after the list changes it, and the wait below sees that.
  let rung = await deps.environments.doorbell(tenantId, environment);
  /** The call that rang the doorbell last, tried alone (no listing) when the claim wakes. */
  let ringing: string | undefined;
  for (;;) {
    const alone = ringing !== undefined && RUNNER_CALL_ID.test(ringing) && mine(ringing);
    const callIds =
      alone && ringing !== undefined
        ? [ringing]
        : (await deps.environments.callIds(tenantId, environment)).filter(mine);
    ringing = undefined;
    // A long poll outlives its authentication: a token revoked meanwhile takes no call. Asked
    // while the first call is read (a round trip less), answered before any claim is made.
    const authorized = callIds.length > 0 && options.stillAuthorized ? options.stillAuthorized() : undefined;
    authorized?.catch(() => undefined);
    const mayClaim = async () => (await authorized) !== false;
    for (const callId of callIds) {
      const claimed = await tryClaim(deps, tenantId, environment, callId, options.mcp === true, mayClaim);
      if (claimed === "refused") return undefined;
      if (claimed) return claimed;
    }
    // The call that rang went to another runner (or is not one for this one): list them all.
    if (alone) continue;
    const until = Math.min(deadline, deps.now() + CLAIM_POLL_MS);
    while (deps.now() < until && !options.signal?.aborted) {
      await sleep(Math.min(doorbellPollMs(rung, deps.now()), Math.max(0, until - deps.now())));
      const now = await deps.environments.doorbell(tenantId, environment);
      if (now?.etag !== rung?.etag) {
        rung = now;
        ringing = now?.callId;
        break;
      }
    }
    if (deps.now() >= deadline || options.signal?.aborted) return undefined;
  }
}

async function tryClaim(
  deps: RunnerCallDeps,
  tenantId: string,
  environment: string,
  callId: string,
  runsMcp: boolean,
  mayClaim: () => Promise<boolean>,
): Promise<ClaimedCall | undefined | "refused"> {
  const read = await deps.environments.readCall(tenantId, environment, callId);
  if (!read || read.value.claim) return undefined;
  if (!runsMcp && (read.value.kind === "mcp-list" || read.value.mcp !== undefined)) return undefined;
  if (!(await mayClaim())) return "refused";
  if (read.value.expired) {
    // Given up by its activity (no runner in time, or cancelled): nobody will claim it.
    await deps.environments.removeCall(tenantId, environment, callId);
    return undefined;
  }
  const call: RunnerCall = {
    ...read.value,
    claim: { id: randomBytes(18).toString("base64url"), at: deps.now() },
  };
  // The conditional replace is the claim: of two runners that read this version, one wins.
  if (!(await deps.environments.replaceCall(call, read.etag))) return undefined;
  const common: ClaimedCommon = {
    callId,
    claimId: call.claim?.id ?? "",
    attempt: call.attempt,
    sessionId: call.sessionId,
    ...(call.network !== undefined ? { network: call.network } : {}),
    ...(call.forkOf !== undefined ? { forkOf: call.forkOf } : {}),
  };
  // A listing runs again whenever asked: it changes nothing.
  if (call.kind === "mcp-list") return { ...common, kind: "mcp-list", servers: call.servers };
  const ref = { tenantId, sessionId: call.sessionId };
  // The first attempt looked for a stored result before it wrote the call, and nothing else
  // writes its slot until a runner answers it: a later attempt's may be there (a late answer).
  const stored = call.attempt > 1 ? await deps.store.getEntry(ref, call.slot.seq) : undefined;
  if (stored) {
    await finish(deps, call, summarize(resultOf(stored, call.slot.id), "adopted"));
    return undefined;
  }
  // An MCP tool's class is the one the run recorded from its server's annotations.
  if ((call.mcp?.replay ?? toolNamed(call.toolCall.name)?.replay) === "unsafe") {
    const first = await deps.markers.markStarted(
      ref,
      { kind: "toolCall", resultSlot: call.slot, toolCallId: call.toolCall.id },
      call.attempt,
    );
    if (!first) {
      await storeResult(
        deps,
        call,
        { content: [{ type: "text", text: UNKNOWN_OUTCOME_TEXT }], isError: true },
        "unknown_outcome",
      );
      return undefined;
    }
  }
  return {
    ...common,
    kind: "tool",
    toolCall: {
      id: call.toolCall.id,
      name: call.toolCall.name,
      arguments: call.argumentsOverride ?? call.toolCall.arguments,
    },
    ...(call.mcp ? { mcp: call.mcp } : {}),
  };
}

/** The call `claimId` holds, or undefined when the claim is not (or no longer) its. */
async function heldCall(
  deps: RunnerCallDeps,
  tenantId: string,
  environment: string,
  callId: string,
  claimId: string,
): Promise<RunnerCall | undefined> {
  const read = await deps.environments.readCall(tenantId, environment, callId);
  return read?.value.claim?.id === claimId ? read.value : undefined;
}

/**
 * Relays a runner's heartbeat to the waiting activity: `cancel` when the run cancelled the call
 * (abort, interrupt), `gone` when the claim is not the runner's any more (the activity timed out
 * and another attempt took over) — the runner stops the call either way.
 */
export async function heartbeatCall(
  deps: RunnerCallDeps,
  tenantId: string,
  environment: string,
  callId: string,
  claimId: string,
  partial?: string,
): Promise<"ok" | "cancel" | "gone"> {
  const call = await heldCall(deps, tenantId, environment, callId, claimId);
  if (!call) return "gone";
  try {
    await (await deps.completion()).heartbeat(Buffer.from(call.taskToken, "base64"), { phase: "runner" });
    // The tool's output so far, to the run's stream as an in-worker tool's would go.
    if (partial !== undefined && deps.publishLive && call.kind !== "mcp-list")
      await deps
        .publishLive(call, {
          type: "tool_execution_update",
          toolCallId: call.toolCall.id,
          toolName: call.toolCall.name,
          attempt: call.attempt,
          partial,
        })
        .catch(() => undefined);
    return "ok";
  } catch (error) {
    if (error instanceof ActivityCancelledError) return "cancel";
    if (error instanceof ActivityNotFoundError) return "gone";
    throw error;
  }
}

/**
 * What a runner reports for a call it holds: a tool call's `output` (and, after an MCP call, the
 * servers that announced a changed tool list), or a listing's `mcpTools`.
 */
export interface RunnerReport {
  output?: ToolOutput;
  mcpToolsChanged?: string[];
  mcpTools?: McpServerListing[];
}

/**
 * Stores a runner's report and completes the activity: `not-held` when the claim is not the
 * runner's, `wrong-kind` when the report does not answer the call (no `output` for a tool call,
 * no `mcpTools` for a listing).
 */
export async function completeCall(
  deps: RunnerCallDeps,
  tenantId: string,
  environment: string,
  callId: string,
  claimId: string,
  report: RunnerReport,
): Promise<"stored" | "not-held" | "wrong-kind"> {
  const call = await heldCall(deps, tenantId, environment, callId, claimId);
  if (!call) return "not-held";
  if (call.kind === "mcp-list") {
    if (!report.mcpTools) return "wrong-kind";
    await finish(deps, call, { servers: await recordListing(deps, call, report.mcpTools) });
    return "stored";
  }
  if (!report.output) return "wrong-kind";
  await storeResult(deps, call, report.output, "executed", report.mcpToolsChanged);
  return "stored";
}

/**
 * A runner's listing as the run records it: one entry per server the run named, in its order (a
 * server the runner left out is unavailable); tool names the providers refuse are dropped and the
 * run's own replay overrides applied again (the run's settings, not the runner, decide them); each
 * ready server's tools stored by digest for the run's model calls, as a worker's listing is.
 */
async function recordListing(
  deps: RunnerCallDeps,
  call: McpListingCall,
  reported: McpServerListing[],
): Promise<McpServerListing[]> {
  const ref = { tenantId: call.tenantId, sessionId: call.sessionId };
  return Promise.all(
    call.servers.map(async (server): Promise<McpServerListing> => {
      const listing = reported.find((candidate) => candidate.server === server.name);
      if (!listing)
        return { server: server.name, status: "unavailable", error: "the runner did not list it" };
      if (listing.status === "unavailable")
        return { server: server.name, status: "unavailable", error: listing.error.slice(0, 1_000) };
      const tools = listing.tools
        .filter((entry) => offeredToModel(server.name, entry.tool))
        .map((entry) => ({ ...entry, replay: server.replay?.[entry.tool] ?? entry.replay }));
      const digest = await deps.mcpListings?.put(ref, tools).catch(() => undefined);
      return { server: server.name, status: "ready", tools, ...(digest ? { digest } : {}) };
    }),
  );
}

async function storeResult(
  deps: RunnerCallDeps,
  call: RunnerToolCall,
  output: ToolOutput,
  outcome: ExecuteToolResult["outcome"],
  mcpToolsChanged?: string[],
): Promise<void> {
  const executed = call.argumentsOverride ?? call.toolCall.arguments;
  let message = toToolResultMessage({ ...call.toolCall, arguments: executed }, output, deps.now());
  if (call.argumentsOverride)
    message = withApprovedEdit(message, call.toolCall.arguments, call.argumentsOverride);
  const ref = { tenantId: call.tenantId, sessionId: call.sessionId };
  const { entry, written } = await deps.store.putEntry(
    ref,
    call.slot.seq,
    createMessageEntry(call.slot, message),
  );
  const changed = mcpToolsChanged?.filter((name) => name === call.mcp?.server.name);
  await finish(deps, call, {
    ...summarize(resultOf(entry, call.slot.id), written ? outcome : "adopted"),
    ...(changed?.length ? { mcpToolsChanged: changed } : {}),
  });
}

/**
 * Completes the waiting activity and removes the call. An activity that is gone (timed out and
 * retried) is no failure: the result is stored, and the retry adopts it.
 */
async function finish(
  deps: RunnerCallDeps,
  call: RunnerCall,
  result: ExecuteToolResult | McpToolList,
): Promise<void> {
  try {
    await (await deps.completion()).complete(Buffer.from(call.taskToken, "base64"), result);
  } catch (error) {
    if (!(error instanceof ActivityNotFoundError)) throw error;
  }
  // Only the version this claim wrote: a newer attempt's call stays for its runners.
  const current = await deps.environments.readCall(call.tenantId, call.environment, call.callId);
  if (current?.value.claim?.id === call.claim?.id)
    await deps.environments.removeCall(call.tenantId, call.environment, call.callId);
}
