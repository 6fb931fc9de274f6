/**
 * The tool activity: a tool call's lifecycle (src/tool-calls/lifecycle.ts) on a worker. It runs
 * the call in the session's workspace and writes its result at the slot the workflow assigned; a
 * stored result is adopted, and an `unsafe` tool (bash) that an earlier attempt may have started
 * is not run again — the model is told the outcome is unknown.
 *
 * What is the worker's own: the workspace (taken, restored where needed) before the call, the
 * start marker of an `unsafe` call written once that workspace is ready, the tool's output so far
 * published to the run's stream as `tool_execution_update`, and, after a tool that may change
 * files, the workspace snapshotted at the result's entry before the result is stored, so a worker
 * dying right after storing it loses no file change.
 */
import { CancelledFailure, Context } from "@temporalio/activity";
import type { ExecuteToolInput, ExecuteToolResult } from "../contracts/activities";
import type { LiveEvent } from "../core/events";
import { UNKNOWN_OUTCOME_TEXT } from "../core/markers";
import type { ToolCallBlock } from "../core/messages";
import type { SessionRef } from "../store/session-keys";
import { callNeedsSecrets, noVaultText, resolveCallSecrets } from "../tool-calls/call-secrets";
import {
  attemptOf,
  markStarted,
  refusal,
  replayClassOf,
  startedBefore,
  storedResult,
  storeResult,
  type ToolCallDeps,
  tailOf,
  toolCallOf,
} from "../tool-calls/lifecycle";
import { runToolCall, workspaceFor } from "../tools";
import type { ToolUpdate } from "../tools/types";
import type { ActivityDeps } from "./deps";
import { failpoint } from "./failpoints";
import { whileHeartbeating } from "./heartbeat";
import { DEFAULT_LIVE_EVENT_OPTIONS, liveEventSink, withLiveTail } from "./live-events";
import { mcpToolsChangedFor, runMcpCall } from "./mcp-tools";
import { inCallWorkspace } from "./workspace-activities";

/** Least time between two published updates of one tool (each carries the output so far). */
const UPDATE_INTERVAL_MS = 1_000;

/** The result of a call that reached a worker of a deployment that runs no tools on its workers. */
export const WORKER_TOOLS_OFF_TEXT =
  "This deployment runs no tools on its workers (KEEL_WORKER_TOOLS=off): the run must name a runner or launched environment. The call did not run.";

/** What the call's work returns when another attempt marked the call started first. */
const STARTED_BY_ANOTHER_ATTEMPT = Symbol("started by another attempt");

export function executeToolActivity(deps: ActivityDeps) {
  const {
    store,
    markers,
    snapshots,
    snapshotMaxBytes,
    workspaceRoot,
    sandbox,
    liveEvents = DEFAULT_LIVE_EVENT_OPTIONS,
    workerTools = true,
  } = deps;
  const lifecycle: ToolCallDeps = {
    store,
    markers,
    ...(deps.usage ? { usage: deps.usage } : {}),
    now: Date.now,
    warn: (message, fields) => Context.current().log.warn(message, fields),
  };
  return async function executeTool(input: ExecuteToolInput): Promise<ExecuteToolResult> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId };
    const ctx = Context.current();
    const attempt = attemptOf(input, ctx.info.attempt);
    const [call, stored] = await Promise.all([toolCallOf(store, input), storedResult(lifecycle, attempt)]);
    if (stored) return stored;

    const toolCall: ToolCallBlock = { ...call, arguments: input.argumentsOverride ?? call.arguments };
    const edit = input.argumentsOverride
      ? { requested: call.arguments, executed: input.argumentsOverride }
      : undefined;
    /** Stores an error result in place of running the call. */
    const refuse = async (text: string, outcome: "executed" | "unknown_outcome") =>
      (await storeResult(lifecycle, attempt, refusal(text), { outcome, ...(edit ? { edit } : {}) })).result;

    // The API refuses such runs; this holds for any that reach a worker anyway (started before
    // the switch, or by a path that missed it): nothing of the agent's runs here.
    if (!workerTools) return refuse(WORKER_TOOLS_OFF_TEXT, "executed");

    // An unsafe call that another attempt started is refused before the workspace is touched:
    // taking it (on the shared queue) would give up the changes that attempt made. Checked on
    // every attempt: the workflow schedules a moved call anew, at attempt 1 again.
    if (await startedBefore(lifecycle, attempt)) return refuse(UNKNOWN_OUTCOME_TEXT, "unknown_outcome");

    // A call that starts processes gets the run's secrets; without a vault here it would run
    // without them, unnoticed: refused instead (the API refuses such runs where it has none).
    const secretNames = callNeedsSecrets(call.name, input.secrets) ? (input.secrets ?? []) : [];
    if (secretNames.length > 0 && !deps.vault) return refuse(noVaultText(secretNames), "executed");

    const startedMs = Date.now();
    const workspace = workspaceFor(workspaceRoot, input.tenantId, input.sessionId);
    // The run claimed the workspace once, but this worker may not have it (any Lambda execution
    // environment takes tool tasks of the shared queue; idle eviction may have removed it): the
    // call then works on the state of its assistant entry, never on an empty directory.
    const leafId = input.slot.parentId;
    let liveTail: LiveEvent[] = [];
    const output = await inCallWorkspace(deps, ref, workspace, leafId, async () => {
      // An abort that came while the workspace was made ready: the call never starts.
      if (ctx.cancellationSignal.aborted)
        throw new CancelledFailure("the call was cancelled before it started");
      // Read fresh for this call (a rotation or deletion counts from the next call), before the
      // start marker: a vault fault fails the attempt, and the retry runs the call with them.
      const secrets =
        secretNames.length > 0 && deps.vault
          ? await resolveCallSecrets(deps.vault, input.tenantId, secretNames)
          : {};
      // Marked once the workspace is ready, right before the call runs: an S3 failure while it
      // was made ready (taken, restored) leaves no marker, so the retry runs the call.
      if (!(await markStarted(lifecycle, attempt))) return STARTED_BY_ANOTHER_ATTEMPT;
      const live = liveEventSink(liveEvents);
      let lastUpdate = 0;
      const result = await whileHeartbeating(ctx, "running", (heartbeat) => {
        const onUpdate = (update: ToolUpdate) => {
          heartbeat({ phase: "update" });
          if (Date.now() - lastUpdate < UPDATE_INTERVAL_MS) return;
          lastUpdate = Date.now();
          live.publish({
            type: "tool_execution_update",
            toolCallId: call.id,
            toolName: call.name,
            attempt: ctx.info.attempt,
            partial: tailOf(update),
          });
        };
        if (input.mcp) {
          const args = toolCall.arguments;
          return runMcpCall(deps, ref, input.network, input.mcp, args, ctx.cancellationSignal, onUpdate);
        }
        return runToolCall(toolCall, {
          workspace,
          sandbox: { ...sandbox, network: input.network ?? "none", tenantId: input.tenantId, ...secrets },
          signal: ctx.cancellationSignal,
          onUpdate,
        });
      }).catch(async (error: unknown) => {
        await live.close();
        throw error;
      });
      liveTail = await live.settle();
      // Before the result is stored: a stored result always has a snapshot at least as new, so a
      // worker that takes the workspace over after a crash restores this call's changes.
      if (replayClassOf(attempt) !== "safe") {
        await snapshotBeforeResult({ snapshots, snapshotMaxBytes }, ref, workspace.dir, input.slot, call.id);
      }
      return result;
    });
    if (output === STARTED_BY_ANOTHER_ATTEMPT) return refuse(UNKNOWN_OUTCOME_TEXT, "unknown_outcome");
    const { result, counted } = await storeResult(lifecycle, attempt, output, {
      outcome: "executed",
      ranSinceMs: startedMs,
      ...(edit ? { edit } : {}),
    });
    await counted;
    failpoint("executeTool.afterWrite");
    if (ctx.cancellationSignal.aborted)
      throw new CancelledFailure("the tool was cancelled; its output is stored");
    const changed = input.mcp ? mcpToolsChangedFor(deps, ref) : [];
    return withLiveTail({ ...result, ...(changed.length > 0 ? { mcpToolsChanged: changed } : {}) }, liveTail);
  };
}

/**
 * Records the workspace in `dir` as the state after the result entry `slot` of call `toolCallId`,
 * before that result is stored (docs/store.md, "Tied to entries"). A failure (too large, S3 errors
 * after retries) is logged and never thrown: the result must be stored whatever happens, the files
 * are on this worker, and the workflow's snapshot after the batch tries again.
 */
async function snapshotBeforeResult(
  { snapshots, snapshotMaxBytes }: Pick<ActivityDeps, "snapshots" | "snapshotMaxBytes">,
  ref: SessionRef,
  dir: string,
  slot: ExecuteToolInput["slot"],
  toolCallId: string,
): Promise<void> {
  const ctx = Context.current();
  try {
    await whileHeartbeating(ctx, "snapshotting", () =>
      snapshots.snapshot(ref, dir, { afterEntryId: slot.id, afterSeq: slot.seq, maxBytes: snapshotMaxBytes }),
    );
  } catch (error) {
    ctx.log.warn("the workspace snapshot before the tool result failed; the result is stored", {
      sessionId: ref.sessionId,
      toolCallId,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** Kept for src/runner/runner.ts until its import names src/tool-calls/lifecycle.ts. */
