/**
 * A turn's tool calls: policy → approval → hooks → execution on the worker that holds the
 * session's workspace (moved when that worker is gone). Every call ends with exactly one stored
 * result, refusals included (an error result the model can read).
 */
import { ActivityFailure, condition, log } from "@temporalio/workflow";
import type { ToolCallSummary } from "../../contracts/activities";
import { MUTATING_TOOLS } from "../../core/tool-replay";
import { blockReason } from "../hooks";
import { PATCHES, takesPatch } from "../patches";
import { decidePolicy } from "../policy";
import { DEFAULT_ENVIRONMENT_WAIT_MS, snapshotActivities, storage, toolActivities } from "./activity-options";
import type { RunContext } from "./context";
import { syntheticToolResult } from "./entries";
import { cancellable, endCall, setStatus, writeEntries } from "./lifecycle";
import { mcpTarget, relistChangedMcpServers } from "./mcp";
import { onRunner } from "./runner-calls";
import { type BatchCall, emit, moveCall, startBatch } from "./state";
import { isTaskCall, runTaskCall } from "./task-calls";
import { callPlace, runnerEnvironment } from "./views";
import { onWorkspaceWorker, workspaceTaskQueue } from "./workspace-claim";

/** Runs a turn's calls (in parallel or one by one, per settings); results land in source order. */
export async function runTools(
  ctx: RunContext,
  calls: ToolCallSummary[],
  assistantSeq: number,
): Promise<void> {
  // Slots in source order before anything runs: results are recorded in that order whatever
  // order parallel executions finish in.
  const batch = startBatch(ctx.run, calls);
  await cancellable(ctx, async () => {
    if (ctx.run.settings.toolExecution === "parallel") {
      await Promise.all(batch.map((call) => handleCall(ctx, call, assistantSeq)));
    } else {
      for (const call of batch) await handleCall(ctx, call, assistantSeq);
    }
  });
  await snapshotAfter(ctx, batch);
  await relistChangedMcpServers(ctx);
}

/**
 * Records the workspace in S3 after a completed batch that ran a tool that may change files, tied
 * to the batch's last result: any worker can then restore it (the workspace follows the session,
 * not the worker). A snapshot that fails is logged and the run goes on: the files are still on the
 * holding worker, and a later batch records them.
 */
async function snapshotAfter(ctx: RunContext, batch: BatchCall[]): Promise<void> {
  const last = batch.at(-1);
  // A runner environment keeps its own files: the worker holds no workspace to record.
  if (runnerEnvironment(ctx.run) !== undefined) return;
  if (!last || !ctx.ranMutatingTool || !takesPatch(PATCHES.workspaceSnapshots, ctx.runVersion)) return;
  ctx.ranMutatingTool = false;
  try {
    // The claim is inside: a workspace that cannot be claimed now is not worth failing the run.
    const queue = await workspaceTaskQueue(ctx);
    await snapshotActivities(queue, ctx.run.settings.timeouts).snapshotWorkspace.executeWithOptions(
      { summary: `snapshot after ${batch.length} tool call(s)` },
      [{ ...ctx.run.ref, afterEntryId: last.slot.id, afterSeq: last.slot.seq }],
    );
    ctx.forkedAt = undefined;
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    log.warn("the workspace snapshot failed; the run goes on", { error: String(error.cause ?? error) });
  }
}

/** Policy, approval and execution of one call; a refusal becomes an error result. */
async function handleCall(ctx: RunContext, call: BatchCall, assistantSeq: number): Promise<void> {
  const { run } = ctx;
  const { summary } = call;
  // The model may name any tool; only those the run was given run (a sub-agent's are a subset of
  // its parent's). Runs started before this check ran such calls: the patch keeps them replaying.
  const offered = run.settings.tools.includes(summary.name) || mcpTarget(run, summary.name) !== undefined;
  if (!offered && (ctx.subAgent || takesPatch(PATCHES.offeredToolsOnly, ctx.runVersion)))
    return refuse(
      ctx,
      call,
      `Tool call refused: ${summary.name} is not one of this ${ctx.subAgent ? "agent" : "run"}'s tools (${run.settings.tools.join(", ")}).`,
    );
  const action = decidePolicy(run.settings.policy, summary.name, summary.argumentsPreview);
  if (action === "deny")
    return refuse(ctx, call, `Tool call denied by policy: ${summary.name} is not allowed.`);
  let args: Record<string, unknown> | undefined;
  if (action === "ask") {
    const decision = await awaitApproval(ctx, call);
    if (decision.kind === "aborted") return;
    if (decision.kind === "refused") return refuse(ctx, call, `Tool call not executed: ${decision.why}.`);
    args = decision.args;
  }
  const blocked = blockReason(ctx.hooks, summary, { mayChange: mayChange(ctx, summary.name) });
  if (blocked) return refuse(ctx, call, `Tool call blocked: ${blocked}.`);
  if (isTaskCall(run.settings, summary.name) && takesPatch(PATCHES.subAgents, ctx.runVersion))
    return runTaskCall(ctx, call, { assistantSeq, args });
  await executeCall(ctx, call, assistantSeq, args);
}

/**
 * Whether the call `name` may change anything, for hooks: a writing built-in, or an MCP tool that
 * is not `safe`. Runs whose hooks saw MCP tools as never changing anything keep replaying
 * (the patch is asked only where the answer differs, and only for runs with hooks).
 */
function mayChange(ctx: RunContext, name: string): boolean {
  if (MUTATING_TOOLS.has(name)) return true;
  const mcp = mcpTarget(ctx.run, name);
  return (
    mcp !== undefined &&
    mcp.replay !== "safe" &&
    ctx.hooks.length > 0 &&
    takesPatch(PATCHES.hooksSeeMcpTools, ctx.runVersion)
  );
}

async function refuse(ctx: RunContext, call: BatchCall, text: string): Promise<void> {
  await writeEntries(ctx, [syntheticToolResult(call, text, ctx.run.clock.now())]);
  endCall(ctx, call, "failed", true);
}

type ApprovalOutcome =
  | { kind: "approved"; args?: Record<string, unknown> }
  | { kind: "refused"; why: string }
  | { kind: "aborted" };

/** Waits durably for a decision on `call` (or the approval timeout, or an abort). */
async function awaitApproval(ctx: RunContext, call: BatchCall): Promise<ApprovalOutcome> {
  const { run } = ctx;
  const id = call.summary.id;
  moveCall(run, id, "awaiting_approval");
  setStatus(ctx, "waiting_approval");
  emit(run, {
    type: "approval_requested",
    toolCallId: id,
    toolName: call.summary.name,
    args: argumentsFromPreview(call.summary.argumentsPreview),
  });
  const decided = await condition(
    () => run.decisions.has(id) || run.abortReason !== undefined,
    run.settings.policy.approvalTimeoutMs,
  );
  if (run.abortReason !== undefined) return { kind: "aborted" };
  const decision = run.decisions.get(id);
  run.decisions.delete(id);
  // Back to running unless another call of the batch still waits for its decision.
  if (!run.calls.calls.some((other) => other.toolCallId !== id && other.state === "awaiting_approval")) {
    setStatus(ctx, "running");
  }
  emit(run, {
    type: "approval_resolved",
    toolCallId: id,
    decision: !decided || !decision ? "timed_out" : decision.decision === "approve" ? "approved" : "rejected",
    ...(decision?.arguments ? { editedArgs: decision.arguments } : {}),
  });
  if (!decided || !decision)
    return { kind: "refused", why: "no decision arrived before the approval timeout" };
  if (decision.decision === "reject") {
    return { kind: "refused", why: `rejected by the user${decision.reason ? `: ${decision.reason}` : ""}` };
  }
  return { kind: "approved", args: decision.arguments };
}

/** Executes one approved call on the workspace's worker; moves the workspace if that worker is gone. */
async function executeCall(
  ctx: RunContext,
  call: BatchCall,
  assistantSeq: number,
  args?: Record<string, unknown>,
): Promise<void> {
  const { run } = ctx;
  moveCall(run, call.summary.id, "running");
  const mcp = mcpTarget(run, call.summary.name);
  // An MCP call goes where its server was listed: the runner environment's, else the workspace's worker.
  const environment = runnerEnvironment(ctx.run);
  emit(run, {
    type: "tool_execution_start",
    toolCallId: call.summary.id,
    toolName: call.summary.name,
    ranOn: callPlace(run, call.summary.name),
  });
  const input = {
    ...run.ref,
    assistantSeq,
    toolCallId: call.summary.id,
    toolName: call.summary.name,
    argumentsOverride: args,
    slot: call.slot,
    ...(run.settings.network !== undefined ? { network: run.settings.network } : {}),
    // Names only: the activity resolves the values (a run without secrets schedules what it did).
    ...(run.settings.secrets?.length ? { secrets: run.settings.secrets } : {}),
    ...(mcp ? { mcp } : {}),
  };
  const waitMs = run.settings.timeouts.environmentWaitMs ?? DEFAULT_ENVIRONMENT_WAIT_MS;
  const result =
    environment === undefined
      ? await onWorkspaceWorker(ctx, (queue) =>
          toolActivities(queue, run.settings.timeouts).executeTool.executeWithOptions(
            { summary: toolSummary(call.summary) },
            [input],
          ),
        )
      : await onRunner(ctx, environment, {
          toolCall: { id: call.summary.id, name: call.summary.name },
          schedule: (activities) =>
            activities.executeToolOnRunner.executeWithOptions(
              { summary: `${toolSummary(call.summary)} @ ${environment}` },
              [{ ...input, environment, waitMs }],
            ),
          unclaimed: (why) => storage.storeUnclaimedRunnerResult({ ...input, environment, waitMs, why }),
        });
  ctx.stream.publishLive(result.live);
  if (MUTATING_TOOLS.has(call.summary.name) || (mcp && mcp.replay !== "safe")) ctx.ranMutatingTool = true;
  if (result.mcpToolsChanged)
    ctx.mcpToolsChanged = new Set([...(ctx.mcpToolsChanged ?? []), ...result.mcpToolsChanged]);
  endCall(ctx, call, result.isError ? "failed" : "completed", result.isError);
}

/** Arguments for an approval event: the JSON preview parsed, or the preview text when it was shortened. */
function argumentsFromPreview(preview: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(preview);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // shortened: not valid JSON any more
  }
  return { preview };
}

/** Activity summary shown in the Temporal UI, e.g. `bash: npm test`. */
function toolSummary(call: ToolCallSummary): string {
  const oneLine = call.label.replace(/\s+/g, " ");
  return `${call.name}: ${oneLine.length > 80 ? `${oneLine.slice(0, 77)}...` : oneLine}`;
}
