/**
 * The tool activity of a run whose tools run in a runner environment (`RunSettings.environment`):
 * the worker runs nothing. It hands the call to the environment's runners — a call object in S3
 * carrying the tool call and this attempt's task token — waits (heartbeating, so a dead worker is
 * noticed) until a runner claims it through the API, and then completes asynchronously: the API
 * relays the runner's heartbeats to this activity and completes it with the runner's result
 * (Temporal's async activity completion by task token).
 *
 * A runner that dies stops heartbeating: the activity's heartbeat timeout fires and Temporal
 * retries it; the retry writes the call again (a new attempt and task token) for another runner.
 * Whether a call may run again is decided when it is claimed (the API, `environments/calls.ts`):
 * an `unsafe` call claimed before gets an unknown-outcome result, never a second run.
 *
 * No runner claiming within `waitMs`: the call gets an error result saying so and the run goes on.
 */

import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { CancelledFailure, CompleteAsyncError, Context } from "@temporalio/activity";
import type { ToolCallBlock } from "../core/messages";
import { createMessageEntry } from "../core/session-entries";
import {
  type Environment,
  type EnvironmentStore,
  mcpListingCallId,
  runnerCallId,
} from "../environments/store";
import type { McpToolList } from "../mcp/types";
import type { SessionRef } from "../store/session-keys";
import { toToolResultMessage } from "../tools";
import type { ActivityDeps } from "./deps";
import { resultOf, summarize, toolCallOf, withApprovedEdit } from "./execute-tool";
import { whileHeartbeating } from "./heartbeat";
import { DEFAULT_LIVE_EVENT_OPTIONS, liveEventSink } from "./live-events";
import { storeWriteFailures } from "./store-failures";
import type { ExecuteToolResult, RunnerMcpListingInput, RunnerToolInput } from "./types";

/** How often the waiting activity looks whether a runner took its call. */
const CLAIM_POLL_MS = 500;

export function runnerToolActivity({
  store,
  environments,
  liveEvents = DEFAULT_LIVE_EVENT_OPTIONS,
  launcher,
}: ActivityDeps) {
  return async function executeToolOnRunner(input: RunnerToolInput): Promise<ExecuteToolResult> {
    if (!environments) throw new Error("this worker has no environment store");
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const ctx = Context.current();
    const [call, stored, environment, header] = await Promise.all([
      toolCallOf(store, input),
      store.getEntry(ref, input.slot.seq),
      environments.get(input.tenantId, input.environment),
      store.getHeader(ref),
    ]);
    if (stored) return summarize(resultOf(stored, input.slot.id), "adopted");

    const callId = runnerCallId(input.sessionId, input.slot.seq);
    const toolCall: ToolCallBlock = { ...call, arguments: input.argumentsOverride ?? call.arguments };
    const failWith = async (text: string): Promise<ExecuteToolResult> => {
      let message = toToolResultMessage(
        toolCall,
        { content: [{ type: "text", text }], isError: true },
        Date.now(),
      );
      if (input.argumentsOverride)
        message = withApprovedEdit(message, call.arguments, input.argumentsOverride);
      const { entry } = await storeWriteFailures(() =>
        store.putEntry(ref, input.slot.seq, createMessageEntry(input.slot, message)),
      );
      return summarize(resultOf(entry, input.slot.id), "executed");
    };
    const launch = launcherFor(launcher, environment, input);
    if (launch === "missing") return failWith(noLauncherText(input.environment, "the call did not run"));
    await environments.putCall({
      callId,
      tenantId: input.tenantId,
      sessionId: input.sessionId,
      environment: input.environment,
      slot: input.slot,
      toolCall: { type: "toolCall", id: call.id, name: call.name, arguments: call.arguments },
      ...(input.argumentsOverride ? { argumentsOverride: input.argumentsOverride } : {}),
      ...(input.mcp ? { mcp: input.mcp } : {}),
      ...(input.network !== undefined ? { network: input.network } : {}),
      ...(header?.parentSession !== undefined ? { forkOf: header.parentSession } : {}),
      attempt: ctx.info.attempt,
      taskToken: Buffer.from(ctx.info.taskToken).toString("base64"),
      createdAt: Date.now(),
    });

    const live = liveEventSink(liveEvents);
    const outcome = await waitForClaim(environments, input, callId, launch, (waiting) =>
      // The run's stream says what the call waits for (the Temporal UI: the heartbeat's phase).
      live.publish({
        type: "tool_execution_update",
        toolCallId: call.id,
        toolName: call.name,
        attempt: ctx.info.attempt,
        partial: `[${waiting}: no runner has taken this call yet]`,
      }),
    ).finally(() => live.close());
    if (outcome === "claimed") throw new CompleteAsyncError();
    // The expired call stays until the API removes it (workers may not delete objects).
    if (outcome === "cancelled") throw new CancelledFailure("the call was cancelled before a runner took it");
    return failWith(
      `No runner of environment \`${input.environment}\` took this call within ${Math.round(input.waitMs / 1000)} s; it did not run.`,
    );
  };
}

/**
 * Lists a run's MCP servers on a runner of its environment, where its stdio servers run and its
 * calls go (`RunSettings.environment`): a listing call for the runners, completed by the API with
 * the runner's answer (environments/calls.ts stores each server's tools by digest), as a tool call
 * is. No runner taking it within `waitMs`: every server is reported unavailable and the run goes on
 * without their tools.
 */
export function runnerMcpListingActivity({ store, environments, launcher }: ActivityDeps) {
  return async function listMcpToolsOnRunner(input: RunnerMcpListingInput): Promise<McpToolList> {
    if (!environments) throw new Error("this worker has no environment store");
    const ctx = Context.current();
    const [environment, header] = await Promise.all([
      environments.get(input.tenantId, input.environment),
      store.getHeader(input),
    ]);
    const unavailable = (error: string): McpToolList => ({
      servers: input.servers.map((server) => ({ server: server.name, status: "unavailable", error })),
    });
    const launch = launcherFor(launcher, environment, input);
    if (launch === "missing") return unavailable(noLauncherText(input.environment, "nothing was listed"));
    // The same id for every attempt of this activity: a retry replaces its predecessor's call.
    const key = createHash("sha256")
      .update(`${ctx.info.workflowExecution?.runId}/${ctx.info.activityId}`)
      .digest("hex")
      .slice(0, 12);
    const callId = mcpListingCallId(input.sessionId, key);
    await environments.putCall({
      kind: "mcp-list",
      callId,
      tenantId: input.tenantId,
      sessionId: input.sessionId,
      environment: input.environment,
      servers: input.servers,
      ...(input.network !== undefined ? { network: input.network } : {}),
      ...(header?.parentSession !== undefined ? { forkOf: header.parentSession } : {}),
      attempt: ctx.info.attempt,
      taskToken: Buffer.from(ctx.info.taskToken).toString("base64"),
      createdAt: Date.now(),
    });
    const outcome = await waitForClaim(environments, input, callId, launch);
    if (outcome === "claimed") throw new CompleteAsyncError();
    if (outcome === "cancelled")
      throw new CancelledFailure("the listing was cancelled before a runner took it");
    return unavailable(
      `no runner of environment \`${input.environment}\` took the listing within ${Math.round(input.waitMs / 1000)} s`,
    );
  };
}

/**
 * A launched environment's runner for the session, from this worker's launcher (asked again while
 * a call waits: one that died or stopped idle is replaced); undefined for a runner environment,
 * `missing` when this worker has no launcher.
 */
function launcherFor(
  launcher: ActivityDeps["launcher"],
  environment: Environment | undefined,
  input: SessionRef & { environment: string },
): (() => Promise<void>) | undefined | "missing" {
  if (environment?.kind !== "launched") return undefined;
  if (!launcher) return "missing";
  const request = { tenantId: input.tenantId, environment: input.environment, sessionId: input.sessionId };
  return () => launcher.ensure(request);
}

function noLauncherText(environment: string, consequence: string): string {
  return `Environment \`${environment}\` is launched, but this deployment's workers launch no runners (KEEL_LAUNCHER); ${consequence}.`;
}

/**
 * Waits (heartbeating) until a runner claims the call, the run cancels it, or `waitMs` passes;
 * `announce` is told once, after the first poll, what the call waits for. A cancelled or expired
 * call is marked so, and no runner takes it after; a claim that won the race wins.
 */
async function waitForClaim(
  environments: EnvironmentStore,
  input: SessionRef & { environment: string; waitMs: number },
  callId: string,
  launch: (() => Promise<void>) | undefined,
  announce?: (waiting: string) => void,
): Promise<"claimed" | "cancelled" | "expired"> {
  const ctx = Context.current();
  const since = Date.now();
  const waiting = `waiting for environment \`${input.environment}\``;
  let announced = false;
  return whileHeartbeating(ctx, waiting, async () => {
    for (;;) {
      await launch?.();
      const current = await environments.readCall(input.tenantId, input.environment, callId);
      // Claimed by a runner of this attempt, or already answered and removed by the API.
      if (!current || current.value.attempt !== ctx.info.attempt || current.value.claim) return "claimed";
      if (ctx.cancellationSignal.aborted) {
        if (await environments.replaceCall({ ...current.value, expired: true }, current.etag))
          return "cancelled";
        return "claimed";
      }
      if (Date.now() - since >= input.waitMs) {
        if (await environments.replaceCall({ ...current.value, expired: true }, current.etag))
          return "expired";
        return "claimed";
      }
      if (!announced && Date.now() - since >= CLAIM_POLL_MS) {
        announced = true;
        announce?.(waiting);
      }
      await sleep(CLAIM_POLL_MS);
    }
  });
}
