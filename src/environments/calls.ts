// Over 400 lines: a runner call's claim, heartbeat and result share the claim record, its checks and the completion by task token; they read best together.
/**
 * The API's side of runner environments. Workflows schedule a runner environment's calls on its
 * Temporal task queue (task-queues.ts); a runner's claim long poll here takes the next task from
 * that queue (Temporal hands a task to a waiting poll as soon as it is scheduled), records the
 * claim in S3 and hands the call over. The runner's heartbeats are relayed to the call's activity
 * and its result is stored at the slot the workflow assigned, then the activity is completed by
 * its task token.
 *
 * A tool call here is the lifecycle of src/tool-calls/lifecycle.ts carried over the API: the same
 * rules as on a worker for a result already stored (adopted), the replay class, the start marker
 * of an `unsafe` call (bash; written at the claim, since the API cannot see when the runner's
 * workspace is ready: docs/environments.md, "The same call as on a worker"), the result entry,
 * the tool time in the tenant's usage and the `execute_tool` span and metric, timed from the claim
 * to the result.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  ActivityCancelledError,
  ActivityNotFoundError,
  type AsyncCompletionClient,
} from "@temporalio/client";
import { ApplicationFailure } from "@temporalio/common";
import type { ExecuteToolResult, RunnerMcpListingInput, RunnerToolInput } from "../contracts/activities";
import { runnerTaskQueue } from "../contracts/task-queues";
import { BoundedCache } from "../core/bounded-cache";
import type { LiveEvent } from "../core/events";
import { UNKNOWN_OUTCOME_TEXT } from "../core/markers";
import { offeredToModel } from "../mcp/tool-names";
import { type McpServerListing, type McpServerSettings, type McpToolList, secretNamesOf } from "../mcp/types";
import type { McpToolListings } from "../store/mcp-tool-listings";
import type { SessionStore } from "../store/session-store";
import type { ToolCallMarkers } from "../store/tool-call-markers";
import type { TenantUsage } from "../tenants/usage";
import { callNeedsSecrets, noVaultText, resolveCallSecrets } from "../tool-calls/call-secrets";
import {
  attemptOf,
  markStarted,
  recordToolCall,
  refusal,
  storedResult,
  storeResult,
  type ToolCallAttempt,
  toolCallOf,
} from "../tool-calls/lifecycle";
import type { ReplayClass, ToolOutput } from "../tools/types";
import type { ResolvedSecret, SecretResolver } from "../vault/types";
import {
  type EnvironmentStore,
  type McpListingCall,
  mcpListingCallId,
  type RunnerCall,
  type RunnerToolCall,
  runnerCallId,
} from "./store";

interface ClaimedCommon {
  callId: string;
  claimId: string;
  attempt: number;
  sessionId: string;
  network?: unknown;
  /**
   * The tenant secrets of the call, resolved at the claim (values included: only in this
   * response, to the authenticated runner, over the API's TLS; never in the claim record): a call
   * that starts processes in a run naming secrets, or the MCP servers it uses that name them. The
   * runner runs the call with them as a worker does and drops them after.
   */
  secrets?: ResolvedSecret[];
  /** Names the tenant no longer has (their placeholders carry nothing). */
  missingSecrets?: string[];
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
interface ClaimedListing extends ClaimedCommon {
  kind: "mcp-list";
  servers: McpServerSettings[];
}

/** What a runner receives for a claim. */
export type ClaimedCall = ClaimedToolCall | ClaimedListing;

/** Activity heartbeats, completions and failures by task token (Temporal's AsyncCompletionClient). */
type ActivityCompletion = Pick<AsyncCompletionClient, "heartbeat" | "complete" | "fail">;

/** An activity task taken from a task queue by `pollActivityTask`. */
export interface PolledActivityTask {
  taskToken: Uint8Array;
  activityType: string;
  activityId: string;
  /** The run of the workflow that scheduled it. */
  workflowRunId: string;
  attempt: number;
  args: unknown[];
  /** Why its input could not be read (a stored payload out of reach): the task is failed back. */
  decodeError?: unknown;
}

/** Takes activity tasks from a task queue (RunClient.pollActivityTask). */
interface ActivityTasks {
  pollActivityTask(
    taskQueue: string,
    identity: string,
    waitMs: number,
  ): Promise<PolledActivityTask | undefined>;
}

export interface RunnerCallDeps {
  environments: EnvironmentStore;
  store: SessionStore;
  markers: ToolCallMarkers;
  completion: () => Promise<ActivityCompletion>;
  /** The environments' task queues, where workflows schedule runner calls. */
  tasks: () => Promise<ActivityTasks>;
  /** Where a runner's MCP listings are stored by digest (absent: the run's history carries them). */
  mcpListings?: Pick<McpToolListings, "put">;
  /** Publishes a live event to the run of the call's session (best effort: a failure is dropped). */
  publishLive?: (call: RunnerCall, event: LiveEvent) => Promise<void>;
  /** The calls this process claimed (one per API process; absent: every check reads S3). */
  claimedHere?: ClaimedHere;
  /** Where tool time is counted per tenant (absent: not counted). */
  usage?: Pick<TenantUsage, "recordTool">;
  /** Tenant secrets, resolved for each claimed call that names them (absent: no vault configured). */
  vault?: SecretResolver;
  /** What is logged and never thrown (tool time that could not be recorded). */
  warn?: (message: string, fields: Record<string, unknown>) => void;
  now: () => number;
}

/**
 * A claim's id: the time of the claim (the API's clock, base 36), then 18 random bytes. The time
 * tells the call's result, at whichever API process it arrives, how long the call took from its
 * claim without another field in the claim record; it is trusted only once the id matched the
 * claim's record or this process's memory of it, so a runner cannot change it.
 */
const claimIdAt = (ms: number) => `${ms.toString(36)}.${randomBytes(18).toString("base64url")}`;
const CLAIM_ID = /^([0-9a-z]{1,11})\.[A-Za-z0-9_-]{24}$/;

/** When the claim `claimId` was made; undefined for a claim made before ids carried it. */
export function claimedAtOf(claimId: string): number | undefined {
  const time = CLAIM_ID.exec(claimId)?.[1];
  return time === undefined ? undefined : Number.parseInt(time, 36);
}

/**
 * The calls this API process claimed, so that a call's heartbeats and result, when they reach the
 * process that claimed it (a Node API; a Lambda API's next request may land on another instance),
 * skip reading its claim record back from S3: that read was a tenth of a runner call's cost.
 *
 * Only the newest claim this process made for a call is kept, and a claim not kept here is
 * checked against its record in S3 as before. A claim another process made later for the same
 * call (Temporal's retry after the first runner stopped heartbeating) is not known here: the older
 * claim's heartbeats are still refused (Temporal answers that its attempt is over), and its result
 * is stored only when the call has none yet (the first result stands, as when a worker thought
 * dead finishes a call), its activity's completion refused. Bounded: the least recently used
 * claims are forgotten first (a runner that died holding a call never reports it; one that
 * heartbeats stays), and a call with an approved edit (its arguments can be large) is not kept.
 */
export class ClaimedHere {
  private readonly calls: BoundedCache<string, RunnerCall>;

  constructor(limit = 4_096) {
    this.calls = new BoundedCache({ capacity: limit });
  }

  remember(call: RunnerCall): void {
    if (call.kind !== "mcp-list" && call.argumentsOverride) return;
    this.calls.set(claimKey(call.tenantId, call.environment, call.callId), call);
  }

  /** The call, when `claimId` is the newest claim this process made for it. */
  held(tenantId: string, environment: string, callId: string, claimId: string): RunnerCall | undefined {
    const call = this.calls.get(claimKey(tenantId, environment, callId));
    return call?.claim.id === claimId ? call : undefined;
  }

  forget(call: RunnerCall): void {
    const key = claimKey(call.tenantId, call.environment, call.callId);
    if (this.calls.peek(key)?.claim.id === call.claim.id) this.calls.delete(key);
  }
}

const claimKey = (tenantId: string, environment: string, callId: string) =>
  JSON.stringify([tenantId, environment, callId]);

/** The activity types of a runner environment's task queue (activities/types.ts, RunnerQueueActivities). */
const TOOL_CALL_ACTIVITY = "executeToolOnRunner";
const LISTING_ACTIVITY = "listMcpToolsOnRunner";

/**
 * The shortest long poll: Temporal refuses a poll with less than 2 s to its deadline, so a claim
 * that asks for less (`waitSeconds` 0) waits this long for a call.
 */
const MIN_POLL_MS = 3_000;

/**
 * Takes the next call of the environment (of the session, for a launched runner's token) from its
 * task queue, waiting up to `waitMs` for one; undefined when none came. A task is never left
 * half-taken: one this claim cannot hand over (the token was revoked meanwhile) is failed at once,
 * and Temporal retries it for another runner. Calls that must not run again are answered here and
 * never handed out.
 *
 * The poll is not cancelled when the runner goes away: Temporal may have matched a task to it at
 * that instant, and that task would then wait out its heartbeat timeout. It ends at `waitMs`.
 */
export async function claimCall(
  deps: RunnerCallDeps,
  tenantId: string,
  environment: string,
  waitMs: number,
  options: {
    /** Aborted when the runner's request went away: a task that arrives after is failed back, not handed to nobody. */
    signal?: AbortSignal;
    stillAuthorized?: () => Promise<boolean>;
    /** A launched runner's token: that session's calls only (the session's own queue). */
    sessionId?: string;
    /** Who polls, as the Temporal UI shows the call's worker (the runner's token id). */
    identity?: string;
    /**
     * The runner says it runs calls with tenant secrets (`runs: ["secrets"]`); a runner of an
     * earlier release would run them without: such a call gets an error result instead.
     */
    secrets?: boolean;
  } = {},
): Promise<ClaimedCall | undefined> {
  const deadline = deps.now() + Math.max(waitMs, MIN_POLL_MS);
  const queue = runnerTaskQueue(tenantId, environment, options.sessionId);
  const tasks = await deps.tasks();
  for (;;) {
    const left = deadline - deps.now();
    if (left < MIN_POLL_MS / 2) return undefined;
    const task = await tasks.pollActivityTask(
      queue,
      options.identity ?? `keel runner of ${environment}`,
      Math.max(left, MIN_POLL_MS),
    );
    // A runner that went away is not polled for again; the poll under way was left to end.
    if (!task && options.signal?.aborted) return undefined;
    if (!task) continue;
    if (options.signal?.aborted) {
      await failTask(deps, task, "the runner went away before the call was handed over");
      return undefined;
    }
    // A long poll outlives its authentication: a token revoked meanwhile takes no call. Asked
    // while the call's reads run, answered before the runner learns of the call.
    const authorized = options.stillAuthorized?.() ?? Promise.resolve(true);
    authorized.catch(() => undefined);
    const claimed = await claimTask(
      deps,
      tenantId,
      environment,
      task,
      async () => (await authorized) !== false,
      options.secrets === true,
    ).catch(async (error: unknown) => {
      // Not left to its heartbeat timeout: Temporal retries it now (a session read that failed),
      // or the run learns why it cannot run (an entry conflict is never retried).
      await failTask(deps, task, error).catch(() => undefined);
      throw error;
    });
    if (claimed === "refused") return undefined;
    if (claimed) return claimed;
  }
}

/** Hands `task` over: the claimed call, undefined when it was answered here, `refused` (token revoked). */
async function claimTask(
  deps: RunnerCallDeps,
  tenantId: string,
  environment: string,
  task: PolledActivityTask,
  mayClaim: () => Promise<boolean>,
  runsSecrets: boolean,
): Promise<ClaimedCall | undefined | "refused"> {
  const common = {
    tenantId,
    environment,
    attempt: task.attempt,
    taskToken: Buffer.from(task.taskToken).toString("base64"),
    claim: { id: claimIdAt(deps.now()) },
  };
  if (task.decodeError !== undefined) throw task.decodeError;
  const refuse = async (call: RunnerCall): Promise<"refused"> => {
    await deps.environments.removeCall(tenantId, environment, call.callId);
    await failTask(deps, task, "the runner's token was revoked before the call was handed over");
    return "refused";
  };
  if (task.activityType === LISTING_ACTIVITY) {
    const input = task.args[0] as RunnerMcpListingInput;
    const call: McpListingCall = {
      ...common,
      kind: "mcp-list",
      // The same id for every attempt of the listing's activity.
      callId: mcpListingCallId(
        input.sessionId,
        createHash("sha256").update(`${task.workflowRunId}/${task.activityId}`).digest("hex").slice(0, 12),
      ),
      sessionId: input.sessionId,
      servers: input.servers,
      ...(input.network !== undefined ? { network: input.network } : {}),
    };
    const [header] = await Promise.all([
      deps.store.getHeader({ tenantId, sessionId: input.sessionId }),
      deps.environments.putCall(call),
    ]);
    if (!(await mayClaim())) return refuse(call);
    // The servers' secrets, for a runner that runs them (another lists such servers as unavailable).
    const names = secretNamesOf(call.servers);
    const secrets =
      names.length > 0 && runsSecrets && deps.vault
        ? await resolveCallSecrets(deps.vault, tenantId, names)
        : undefined;
    deps.claimedHere?.remember(call);
    return {
      ...claimedCommon(call, header?.parentSession),
      kind: "mcp-list",
      servers: call.servers,
      ...(secrets ? { secrets: secrets.secrets, missingSecrets: secrets.missingSecrets } : {}),
    };
  }
  if (task.activityType !== TOOL_CALL_ACTIVITY) {
    await failTask(deps, task, `a runner environment's queue holds no ${task.activityType} tasks`);
    return undefined;
  }
  const input = task.args[0] as RunnerToolInput;
  const ref = { tenantId, sessionId: input.sessionId };
  const attempt = attemptOf(input, task.attempt);
  const call: RunnerToolCall = {
    ...common,
    kind: "tool",
    callId: runnerCallId(input.sessionId, input.slot.seq),
    sessionId: input.sessionId,
    slot: input.slot,
    toolCall: { id: input.toolCallId, name: input.toolName },
    ...(input.argumentsOverride ? { argumentsOverride: input.argumentsOverride } : {}),
    ...(input.mcp ? { mcp: input.mcp } : {}),
    ...(input.network !== undefined ? { network: input.network } : {}),
  };
  // One round trip: the call as the model made it, a result stored meanwhile (where the lifecycle
  // looks for one: a call moved to this queue is scheduled anew at attempt 1 and may have one),
  // the session's parent, and the claim record (an approved edit's records the model's arguments,
  // so it waits for them).
  const [toolCall, stored, header] = await Promise.all([
    toolCallOf(deps.store, input),
    storedResult(deps, attempt),
    deps.store.getHeader(ref),
    input.argumentsOverride ? undefined : deps.environments.putCall(call),
  ]);
  if (input.argumentsOverride) {
    call.toolCall.arguments = toolCall.arguments;
    await deps.environments.putCall(call);
  }
  if (!(await mayClaim())) return refuse(call);
  if (stored) {
    await finishToolCall(deps, call, stored, false);
    return undefined;
  }
  // The call's secrets, read now (a rotation counts from the next call), before the start marker:
  // a vault fault fails the task back (retried), leaving no marker. Never run without them.
  const secretNames = input.mcp
    ? secretNamesOf([input.mcp.server])
    : callNeedsSecrets(toolCall.name, input.secrets)
      ? (input.secrets ?? [])
      : [];
  let secrets: Awaited<ReturnType<typeof resolveCallSecrets>> | undefined;
  if (secretNames.length > 0) {
    const refused = !runsSecrets
      ? `This run names tenant secrets (${secretNames.join(", ")}), and the runner that claimed the call does not say it runs calls with secrets (an earlier release would run it without them): the call was not run. Run a \`keel runner\` of this release.`
      : !deps.vault
        ? noVaultText(secretNames, "API")
        : undefined;
    if (refused !== undefined) {
      await storeToolResult(deps, call, refusal(refused), "executed");
      return undefined;
    }
    if (deps.vault) secrets = await resolveCallSecrets(deps.vault, tenantId, secretNames);
  }
  // The marker is written here, at the claim, the last moment the API knows of before the runner
  // runs the call (it cannot see when the runner's workspace is ready).
  if (!(await markStarted(deps, attempt))) {
    await storeToolResult(deps, call, refusal(UNKNOWN_OUTCOME_TEXT), "unknown_outcome");
    return undefined;
  }
  deps.claimedHere?.remember(call);
  return {
    ...claimedCommon(call, header?.parentSession),
    kind: "tool",
    toolCall: {
      id: toolCall.id,
      name: toolCall.name,
      arguments: input.argumentsOverride ?? toolCall.arguments,
    },
    ...(call.mcp ? { mcp: call.mcp } : {}),
    ...(secrets ? { secrets: secrets.secrets, missingSecrets: secrets.missingSecrets } : {}),
  };
}

function claimedCommon(call: RunnerCall, forkOf: string | undefined): ClaimedCommon {
  return {
    callId: call.callId,
    claimId: call.claim.id,
    attempt: call.attempt,
    sessionId: call.sessionId,
    ...(call.network !== undefined ? { network: call.network } : {}),
    ...(forkOf !== undefined ? { forkOf } : {}),
  };
}

/**
 * Fails a task this claim cannot hand over: Temporal retries it (a new attempt, back on the
 * queue), unless `why` is a failure that is never retried (an entry conflict).
 */
async function failTask(deps: RunnerCallDeps, task: PolledActivityTask, why: unknown): Promise<void> {
  const failure =
    typeof why === "string"
      ? ApplicationFailure.retryable(why, "RunnerCallNotHandedOver")
      : why instanceof Error
        ? why
        : new Error(String(why));
  try {
    await (await deps.completion()).fail(task.taskToken, failure);
  } catch (error) {
    if (!(error instanceof ActivityNotFoundError)) throw error;
  }
}

/** The call `claimId` holds, or undefined when the claim is not (or no longer) its. */
async function heldCall(
  deps: RunnerCallDeps,
  tenantId: string,
  environment: string,
  callId: string,
  claimId: string,
): Promise<RunnerCall | undefined> {
  const here = deps.claimedHere?.held(tenantId, environment, callId, claimId);
  if (here) return here;
  const call = await deps.environments.readCall(tenantId, environment, callId);
  return call?.claim.id === claimId ? call : undefined;
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
  /** The runner's token still stands (asked while the call is read; runner-auth.ts). */
  authorized: Promise<boolean>,
  partial?: string,
): Promise<"ok" | "cancel" | "gone" | "unauthorized"> {
  const [call, allowed] = await Promise.all([
    heldCall(deps, tenantId, environment, callId, claimId),
    authorized,
  ]);
  if (!allowed) return "unauthorized";
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
  /** The runner's token still stands (asked while the call is read; runner-auth.ts). */
  authorized: Promise<boolean>,
): Promise<"stored" | "not-held" | "wrong-kind" | "unauthorized"> {
  const [call, allowed] = await Promise.all([
    heldCall(deps, tenantId, environment, callId, claimId),
    authorized,
  ]);
  if (!allowed) return "unauthorized";
  if (!call) return "not-held";
  if (call.kind === "mcp-list") {
    if (!report.mcpTools) return "wrong-kind";
    // A listing lives only in its activity's result: one whose attempt is over is not stored.
    const completed = await finish(deps, call, { servers: await recordListing(deps, call, report.mcpTools) });
    return completed ? "stored" : "not-held";
  }
  if (!report.output) return "wrong-kind";
  return storeToolResult(deps, call, report.output, "executed", report.mcpToolsChanged);
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

/** The attempt at the call a claim record holds, as the lifecycle knows it. */
function attemptOfCall(call: RunnerToolCall): ToolCallAttempt {
  return attemptOf(
    {
      tenantId: call.tenantId,
      sessionId: call.sessionId,
      slot: call.slot,
      toolCallId: call.toolCall.id,
      toolName: call.toolCall.name,
      ...(call.mcp ? { mcp: call.mcp } : {}),
    },
    call.attempt,
  );
}

/**
 * Stores `output` at the call's slot unless a result is there already, and completes the call's
 * activity with the stored one: `not-held` when neither happened (a superseded claim's late
 * report, see ClaimedHere), `stored` otherwise. Output the runner produced counts as tool time
 * from the claim on.
 */
async function storeToolResult(
  deps: RunnerCallDeps,
  call: RunnerToolCall,
  output: ToolOutput,
  outcome: "executed" | "unknown_outcome",
  mcpToolsChanged?: string[],
): Promise<"stored" | "not-held"> {
  const claimedAt = outcome === "executed" ? claimedAtOf(call.claim.id) : undefined;
  const { result, written, counted } = await storeResult(deps, attemptOfCall(call), output, {
    outcome,
    ...(call.argumentsOverride
      ? { edit: { requested: call.toolCall.arguments ?? {}, executed: call.argumentsOverride } }
      : {}),
    ...(claimedAt !== undefined ? { ranSinceMs: claimedAt } : {}),
  });
  const changed = mcpToolsChanged?.filter((name) => name === call.mcp?.server.name);
  // The tool time is recorded while the activity is completed: the result's path waits for
  // neither S3 request alone.
  const [completed] = await Promise.all([
    finishToolCall(
      deps,
      call,
      { ...result, ...(changed?.length ? { mcpToolsChanged: changed } : {}) },
      written,
    ),
    counted,
  ]);
  return written || completed ? "stored" : "not-held";
}

/**
 * Completes a tool call's activity with `result` (`written`: this claim stored it) and, when
 * either took effect, records the call's span and metric from its claim until now.
 */
async function finishToolCall(
  deps: RunnerCallDeps,
  call: RunnerToolCall,
  result: ExecuteToolResult,
  written: boolean,
): Promise<boolean> {
  const completed = await finish(deps, call, result);
  const claimedAt = claimedAtOf(call.claim.id);
  if ((written || completed) && claimedAt !== undefined)
    recordToolCall(attemptOfCall(call), result, claimedAt, deps.now(), {
      "keel.tenant_id": call.tenantId,
      "keel.session_id": call.sessionId,
      "keel.environment": call.environment,
    });
  return completed;
}

/**
 * Completes the waiting activity and removes the call; false when the activity is gone (timed
 * out and retried), which is no failure: a result stored is adopted by the retry.
 */
async function finish(
  deps: RunnerCallDeps,
  call: RunnerCall,
  result: ExecuteToolResult | McpToolList,
): Promise<boolean> {
  let completed = true;
  try {
    await (await deps.completion()).complete(Buffer.from(call.taskToken, "base64"), result);
  } catch (error) {
    if (!(error instanceof ActivityNotFoundError)) throw error;
    completed = false;
  }
  deps.claimedHere?.forget(call);
  // Only the record this claim wrote. A completion Temporal accepted proves this attempt was the
  // newest, so its record is this claim's; otherwise a newer attempt's claim may stand there for
  // its runner. Best effort: the result is in, so a runner's retry must not meet a failure here;
  // a record left behind is read by nothing but the environment's count of calls.
  const ours =
    completed ||
    (await deps.environments
      .readCall(call.tenantId, call.environment, call.callId)
      .then((current) => current?.claim.id === call.claim.id)
      .catch(() => false));
  if (ours)
    await deps.environments.removeCall(call.tenantId, call.environment, call.callId).catch(() => undefined);
  return completed;
}
