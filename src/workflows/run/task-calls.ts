/**
 * The `task` tool: a call delegates to a sub-agent, run as a Temporal child workflow (the same
 * `agentRun`) on its own session. The child's session id derives from the parent session and the
 * call's id, so a retried or replayed start names the same workflow and never starts it twice; an
 * abort of the parent is sent on to the child (which closes its session like any abort), and a
 * parent closed without that (terminated) has its children cancelled by Temporal.
 */
import { WorkflowExecutionAlreadyStartedError } from "@temporalio/common";
import {
  ActivityFailure,
  CancellationScope,
  ChildWorkflowFailure,
  condition,
  ParentClosePolicy,
  startChild,
} from "@temporalio/workflow";
import type { MergeSubAgentWorkspaceResult } from "../../contracts/activities";
import {
  type RunInput,
  type RunResult,
  type RunSettings,
  runWorkflowId,
  startedStatus,
} from "../../contracts/runs";
import {
  type AgentDefinition,
  availableAgents,
  childSessionId,
  childTools,
  DEFAULT_AGENT_MAX_TURNS,
  parseTaskArguments,
  TASK_TOOL_NAME,
  taskResultText,
} from "../../core/agents";
import { emptyUsage } from "../../core/usage";
import { abortSignal } from "../definitions";
import { PATCHES, takesPatch } from "../patches";
import { runAttributes } from "../search-attributes";
import { snapshotActivities, storage } from "./activity-options";
import { childShare, wholeBudgetLeft } from "./budget";
import type { RunContext } from "./context";
import { syntheticToolResult } from "./entries";
import { endCall, writeEntries } from "./lifecycle";
import {
  type BatchCall,
  type ChildShare,
  emit,
  holdShare,
  moveCall,
  recordModelUsage,
  releaseShare,
} from "./state";
import { onWorkspaceWorker } from "./workspace-claim";

/** Whether `name` is the run's `task` tool (the run offers it: its tools name it). */
export function isTaskCall(settings: RunSettings, name: string): boolean {
  return name === TASK_TOOL_NAME && settings.tools.includes(TASK_TOOL_NAME);
}

/** The agents' names and descriptions for the model call, when the run offers `task`. */
export function taskAgentsFor(settings: RunSettings): { name: string; description: string }[] | undefined {
  if (!settings.tools.includes(TASK_TOOL_NAME)) return undefined;
  return availableAgents(settings.agents).map(({ name, description }) => ({ name, description }));
}

/**
 * A child's settings: the parent's, narrowed by the agent (its model, prompt, tools — only those
 * the parent has, `task` only as `childTools` allows at the child's `depth` —, turns: at most
 * `share.maxTurns`), the parent's policy and hooks kept, and the cost and token budgets of its
 * `share` of the parent's (run/budget.ts). No chat reply; the parent's agents only when the child
 * may delegate to them.
 */
export function childSettings(
  parent: RunSettings,
  agent: AgentDefinition,
  share: ChildShare,
  depth = 1,
): RunSettings {
  const { chatReply: _chatReply, agents, systemPrompt: _systemPrompt, fallbackModels, ...kept } = parent;
  const tools = childTools(parent.tools, agent, depth);
  return {
    ...kept,
    // An agent without a model of its own takes the parent's, with the models it fails over to.
    model: agent.model ?? parent.model,
    ...(agent.model === undefined && fallbackModels !== undefined ? { fallbackModels } : {}),
    ...(agent.systemPrompt !== undefined ? { systemPrompt: agent.systemPrompt } : {}),
    ...(agents !== undefined && tools.includes(TASK_TOOL_NAME) ? { agents } : {}),
    tools,
    limits: {
      ...parent.limits,
      // At least one: a share of no turns is not started, and runs from before shares only made a
      // task call with a turn to spare.
      maxTurns: Math.max(1, Math.min(agent.maxTurns ?? DEFAULT_AGENT_MAX_TURNS, share.maxTurns)),
      maxCostUsd: share.maxCostUsd,
      // Without a token budget the parent's "none" (0 or absent) is kept as it is.
      ...(share.maxTokens > 0 ? { maxTokens: share.maxTokens } : {}),
    },
  };
}

/** What a `task` call needs of its batch: the assistant entry and edited arguments. */
export interface TaskCallContext {
  assistantSeq: number;
  /** The arguments an approver edited, if any. */
  args?: Record<string, unknown>;
}

/**
 * Runs one `task` call: takes the child's share of the run's budgets (held until it ends; a share
 * of no turns is an error result instead), snapshots the parent's workspace at the call's
 * assistant entry (once per batch; the child's workspace starts from it), starts the child, waits
 * for its end (sending an abort of the parent on to it), gives its share back and adds its usage
 * to the run's, and stores the result (its answer, or an error result when the child did not
 * complete). After the parent's abort nothing is stored: the abort closes the call.
 */
export async function runTaskCall(ctx: RunContext, call: BatchCall, batch: TaskCallContext): Promise<void> {
  const { run } = ctx;
  const { summary } = call;
  const json = batch.args ? JSON.stringify(batch.args) : summary.argumentsPreview;
  const parsed = parseTaskArguments(json, availableAgents(run.settings.agents));
  if (!parsed.ok) {
    await writeEntries(ctx, [syntheticToolResult(call, parsed.error, run.clock.now())]);
    return endCall(ctx, call, "failed", true);
  }
  const depth = ctx.depth + 1;
  // Taken before the child's first await, so the batch's calls take their shares in order. Runs
  // started before shares give each child all the parent has left (below).
  let shared: RunSettings | undefined;
  if (takesPatch(PATCHES.subAgentShares, ctx.runVersion)) {
    const share = childShare(run, call.slot.seq);
    if (share.maxTurns === 0) {
      const why = `task not started: this run has no turns left to give a sub-agent (its limit of ${run.settings.limits.maxTurns} turns counts its sub-agents' turns, those of sub-agents still running included)`;
      await writeEntries(ctx, [syntheticToolResult(call, why, run.clock.now())]);
      return endCall(ctx, call, "failed", true);
    }
    shared = childSettings(run.settings, parsed.agent, share, depth);
    const { maxCostUsd, maxTokens = 0, maxTurns } = shared.limits;
    holdShare(run, call.slot.seq, { maxCostUsd, maxTokens, maxTurns });
  }
  moveCall(run, summary.id, "running");
  emit(run, {
    type: "tool_execution_start",
    toolCallId: summary.id,
    toolName: summary.name,
    ranOn: "sub-agent",
  });
  // The batch's first slot follows the assistant entry (the others follow the results before them).
  const forkedAt = run.batch[0]?.slot.parentId;
  if (!forkedAt) throw new Error("a tool batch's first slot has no parent entry");
  try {
    await forkPoint(ctx, forkedAt, batch);
  } catch (error) {
    releaseShare(run, call.slot.seq);
    // Cut short by the parent's abort: the abort closes the call.
    if (!(error instanceof ActivityFailure) || run.abortReason !== undefined) throw error;
    const why = `task not started: the workspace could not be recorded for the agent (${error.cause?.message ?? error.message})`;
    await writeEntries(ctx, [syntheticToolResult(call, why, run.clock.now())]);
    return endCall(ctx, call, "failed", true);
  }
  const ref = { tenantId: run.ref.tenantId, sessionId: childSessionId(run.ref.sessionId, summary.id) };
  // Shares count the children's turns; runs started before sub-agents' turns counted keep the
  // parent's whole turn limit for the child.
  const treeTurns = shared !== undefined || takesPatch(PATCHES.subAgentTurns, ctx.runVersion);
  const settings =
    shared ?? childSettings(run.settings, parsed.agent, wholeBudgetLeft(run, treeTurns), depth);
  const input: RunInput = {
    ...ref,
    settings,
    handedOver: { messages: [{ text: parsed.prompt, acceptedAt: run.clock.now() }], deliveries: [] },
    parent: {
      sessionId: run.ref.sessionId,
      toolCallId: summary.id,
      forkedAt,
      ...(depth > 1 ? { depth } : {}),
    },
    ...(ctx.runVersion > 0 ? { runVersion: ctx.runVersion } : {}),
  };
  const outcome = await CancellationScope.nonCancellable(() => awaitChild(ctx, input));
  // In one step: what the child held goes back and what it spent is counted.
  releaseShare(run, call.slot.seq);
  if (outcome.kind === "result") {
    recordModelUsage(run, outcome.result.usage);
    // Its own turns and those of its children in turn.
    if (treeTurns) run.subAgentTurns += outcome.result.turns + (outcome.result.subAgentTurns ?? 0);
  }
  if (run.abortReason !== undefined) return;
  const merge =
    outcome.kind === "result" ? await mergeChildEdits(ctx, parsed.agent, forkedAt, ref, call) : undefined;
  const result: Pick<RunResult, "status" | "reason" | "usage" | "answer"> =
    outcome.kind === "result"
      ? outcome.result
      : { status: "failed", reason: outcome.error, usage: emptyUsage() };
  if (takesPatch(PATCHES.taskResultFromSession, ctx.runVersion)) {
    const stored = await CancellationScope.nonCancellable(() =>
      storage.storeTaskResult({
        ...run.ref,
        slot: call.slot,
        toolCallId: summary.id,
        toolName: summary.name,
        agent: parsed.agent.name,
        child: ref,
        status: result.status,
        reason: result.reason,
        usage: result.usage,
        cutShort: outcome.kind === "result" && outcome.result.cutShort === true,
        readAnswer: outcome.kind === "result",
        ...(merge ? { merge } : {}),
      }),
    );
    return endCall(ctx, call, stored.isError ? "failed" : "completed", stored.isError);
  }
  const text = taskResultText({
    agent: parsed.agent.name,
    sessionId: ref.sessionId,
    status: result.status,
    reason: result.reason,
    answer: result.answer ?? "",
    usage: result.usage,
  });
  const isError = result.status !== "completed";
  await writeEntries(ctx, [syntheticToolResult(call, text, run.clock.now(), isError)]);
  endCall(ctx, call, isError ? "failed" : "completed", isError);
}

/**
 * Carries the child's edits into the parent's workspace (activities/sub-agent-merge.ts) unless its
 * agent works in a fork (`workspace: "fork"`). When the run's tools run in a runner environment the
 * children there keep their own folder: `separate`, so the call's result says where the edits are.
 * A merge that fails for good becomes `unavailable`: the call's result says so and the edits stay
 * in the child's session.
 */
async function mergeChildEdits(
  ctx: RunContext,
  agent: AgentDefinition,
  forkedAt: string,
  child: { tenantId: string; sessionId: string },
  call: BatchCall,
): Promise<MergeSubAgentWorkspaceResult | undefined> {
  const { run } = ctx;
  const { environment } = run.settings;
  if (agent.workspace === "fork") return undefined;
  // No merge on runners: the result says where the edits are instead.
  if (environment !== undefined && environment !== "worker") return { outcome: "separate", environment };
  if (!takesPatch(PATCHES.subAgentWorkspaceMerge, ctx.runVersion)) return undefined;
  try {
    // The worker holding the workspace may be gone: the merge follows the workspace.
    return await onWorkspaceWorker(ctx, (queue) =>
      CancellationScope.nonCancellable(() =>
        snapshotActivities(queue, run.settings.timeouts).mergeSubAgentWorkspace.executeWithOptions(
          { summary: `merge ${agent.name}'s edits` },
          [{ ...run.ref, forkedAt, child, slot: call.slot }],
        ),
      ),
    );
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return { outcome: "unavailable", reason: error.cause?.message ?? error.message };
  }
}

/**
 * Records the parent's workspace as the state after `entryId` (the assistant entry with the
 * calls): the children of the batch restore it into their own workspaces. One snapshot serves the
 * batch's calls; a failed one is forgotten, so the next call tries again. A holder that died
 * leaves the snapshot to the next worker, which restores the workspace first (runs recorded
 * before that answered "task not started").
 */
async function forkPoint(ctx: RunContext, entryId: string, batch: TaskCallContext): Promise<void> {
  if (ctx.taskFork?.entryId !== entryId) {
    const taken = onWorkspaceWorker(
      ctx,
      (queue) =>
        snapshotActivities(queue, ctx.run.settings.timeouts).snapshotWorkspace.executeWithOptions(
          { summary: "snapshot for sub-agents" },
          [{ ...ctx.run.ref, afterEntryId: entryId, afterSeq: batch.assistantSeq }],
        ),
      () => takesPatch(PATCHES.subAgentForkPointMoves, ctx.runVersion),
    ).then(() => undefined);
    ctx.taskFork = { entryId, taken };
  }
  const fork = ctx.taskFork;
  try {
    await fork.taken;
  } catch (error) {
    if (ctx.taskFork === fork) ctx.taskFork = undefined;
    throw error;
  }
}

type ChildOutcome = { kind: "result"; result: RunResult } | { kind: "failed"; error: string };

/** Starts the child and waits for its result; an abort of the parent is sent on to the child. */
async function awaitChild(ctx: RunContext, input: RunInput): Promise<ChildOutcome> {
  const { run } = ctx;
  try {
    const child = await startChild<(input: RunInput) => Promise<RunResult>>("agentRun", {
      workflowId: runWorkflowId(input),
      args: [input],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      typedSearchAttributes: runAttributes(input, startedStatus(ctx.runVersion)),
    });
    let ended = false;
    const result = child.result().finally(() => {
      ended = true;
    });
    // Keeps an early rejection from being reported as unhandled while the condition waits.
    result.catch(() => undefined);
    await condition(() => ended || run.abortReason !== undefined);
    if (!ended) await child.signal(abortSignal, `the parent run was aborted: ${run.abortReason}`);
    return { kind: "result", result: await result };
  } catch (error) {
    // The child ended without a result (terminated, cancelled, timed out) or could not start.
    if (error instanceof ChildWorkflowFailure)
      return { kind: "failed", error: error.cause?.message ?? error.message };
    if (error instanceof WorkflowExecutionAlreadyStartedError)
      return { kind: "failed", error: error.message };
    throw error;
  }
}
