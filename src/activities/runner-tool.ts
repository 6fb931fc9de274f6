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

import { setTimeout as sleep } from "node:timers/promises";
import { CancelledFailure, CompleteAsyncError, Context } from "@temporalio/activity";
import type { ToolCallBlock } from "../core/messages";
import { createMessageEntry } from "../core/session-entries";
import { runnerCallId } from "../environments/store";
import { toToolResultMessage } from "../tools";
import type { ActivityDeps } from "./deps";
import { resultOf, summarize, toolCallOf, withApprovedEdit } from "./execute-tool";
import { whileHeartbeating } from "./heartbeat";
import { DEFAULT_LIVE_EVENT_OPTIONS, liveEventSink } from "./live-events";
import { storeWriteFailures } from "./store-failures";
import type { ExecuteToolResult, RunnerToolInput } from "./types";

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
    const call = await toolCallOf(store, input);
    const [stored, environment, header] = await Promise.all([
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
    // A launched environment gets a runner for this session from this worker's launcher, asked
    // again while the call waits: one that died or stopped idle is replaced.
    let launch: (() => Promise<void>) | undefined;
    if (environment?.kind === "launched") {
      if (!launcher)
        return failWith(
          `Environment \`${input.environment}\` is launched, but this deployment's workers launch no runners (KEEL_LAUNCHER); the call did not run.`,
        );
      const request = {
        tenantId: input.tenantId,
        environment: input.environment,
        sessionId: input.sessionId,
      };
      launch = () => launcher.ensure(request);
    }
    await environments.putCall({
      callId,
      tenantId: input.tenantId,
      sessionId: input.sessionId,
      environment: input.environment,
      slot: input.slot,
      toolCall: { type: "toolCall", id: call.id, name: call.name, arguments: call.arguments },
      ...(input.argumentsOverride ? { argumentsOverride: input.argumentsOverride } : {}),
      ...(input.network !== undefined ? { network: input.network } : {}),
      ...(header?.parentSession !== undefined ? { forkOf: header.parentSession } : {}),
      attempt: ctx.info.attempt,
      taskToken: Buffer.from(ctx.info.taskToken).toString("base64"),
      createdAt: Date.now(),
    });

    const since = Date.now();
    const waiting = `waiting for environment \`${input.environment}\``;
    const live = liveEventSink(liveEvents);
    let announced = false;
    const outcome = await whileHeartbeating(ctx, waiting, async () => {
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
          // The run's stream says what the call waits for (the Temporal UI: the heartbeat's phase).
          announced = true;
          live.publish({
            type: "tool_execution_update",
            toolCallId: call.id,
            toolName: call.name,
            attempt: ctx.info.attempt,
            partial: `[${waiting}: no runner has taken this call yet]`,
          });
        }
        await sleep(CLAIM_POLL_MS);
      }
    }).finally(() => live.close());
    if (outcome === "claimed") throw new CompleteAsyncError();
    // The expired call stays until the API removes it (workers may not delete objects).
    if (outcome === "cancelled") throw new CancelledFailure("the call was cancelled before a runner took it");
    return failWith(
      `No runner of environment \`${input.environment}\` took this call within ${Math.round(input.waitMs / 1000)} s; it did not run.`,
    );
  };
}
