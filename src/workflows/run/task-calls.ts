/**
 * The `task` tool: a call delegates to a sub-agent, run as a Temporal child workflow (the same
 * `agentRun`) on its own session. The child's session id derives from the parent session and the
 * call's id, so a retried or replayed start names the same workflow and never starts it twice; an
 * abort of the parent is sent on to the child (which closes its session like any abort), and a
 * parent closed without that (terminated) has its children cancelled by Temporal.
 */
import { WorkflowExecutionAlreadyStartedError } from "@temporalio/common";
import {
  CancellationScope,
  ChildWorkflowFailure,
  condition,
  ParentClosePolicy,
  startChild,
} from "@temporalio/workflow";
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
import { runAttributes } from "../search-attributes";
import { type RunInput, type RunResult, type RunSettings, runWorkflowId, startedStatus } from "../types";
import type { RunContext } from "./context";
import { syntheticToolResult } from "./entries";
import { endCall, writeEntries } from "./lifecycle";
import { type BatchCall, emit, moveCall, recordModelUsage } from "./state";

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
 * the parent has —, turns), the parent's policy and hooks kept, and a cost budget of what the
 * parent has left of its own. No chat reply, no agents of its own (no nesting yet).
 */
export function childSettings(
  parent: RunSettings,
  agent: AgentDefinition,
  parentSpentUsd: number,
): RunSettings {
  const { chatReply: _chatReply, agents: _agents, systemPrompt: _systemPrompt, ...kept } = parent;
  const budget = parent.limits.maxCostUsd;
  return {
    ...kept,
    model: agent.model ?? parent.model,
    ...(agent.systemPrompt !== undefined ? { systemPrompt: agent.systemPrompt } : {}),
    tools: childTools(parent.tools, agent),
    limits: {
      ...parent.limits,
      maxTurns: Math.min(agent.maxTurns ?? DEFAULT_AGENT_MAX_TURNS, parent.limits.maxTurns),
      // A budget the parent has spent leaves the child a token one (0 would mean "no budget").
      maxCostUsd: budget > 0 ? Math.max(budget - parentSpentUsd, 1e-9) : 0,
    },
  };
}

/**
 * Runs one `task` call (with the arguments an approver edited, if any): starts the child, waits for its end (sending an abort of the parent on to
 * it), adds its usage to the run's and stores the result (its answer, or an error result when
 * the child did not complete). After the parent's abort nothing is stored: the abort closes it.
 */
export async function runTaskCall(
  ctx: RunContext,
  call: BatchCall,
  approvedArgs?: Record<string, unknown>,
): Promise<void> {
  const { run } = ctx;
  const { summary } = call;
  const json = approvedArgs ? JSON.stringify(approvedArgs) : summary.argumentsPreview;
  const parsed = parseTaskArguments(json, availableAgents(run.settings.agents));
  if (!parsed.ok) {
    await writeEntries(ctx, [syntheticToolResult(call, parsed.error, run.clock.now())]);
    return endCall(ctx, call, "failed", true);
  }
  moveCall(run, summary.id, "running");
  emit(run, { type: "tool_execution_start", toolCallId: summary.id, toolName: summary.name });
  const ref = { tenantId: run.ref.tenantId, sessionId: childSessionId(run.ref.sessionId, summary.id) };
  const settings = childSettings(run.settings, parsed.agent, run.usage.cost.total);
  const input: RunInput = {
    ...ref,
    settings,
    handedOver: { messages: [{ text: parsed.prompt, acceptedAt: run.clock.now() }], deliveries: [] },
    parent: { sessionId: run.ref.sessionId, toolCallId: summary.id },
    ...(ctx.runVersion > 0 ? { runVersion: ctx.runVersion } : {}),
  };
  const outcome = await CancellationScope.nonCancellable(() => awaitChild(ctx, input));
  if (outcome.kind === "result") recordModelUsage(run, outcome.result.usage);
  if (run.abortReason !== undefined) return;
  const result: Pick<RunResult, "status" | "reason" | "usage" | "answer"> =
    outcome.kind === "result"
      ? outcome.result
      : { status: "failed", reason: outcome.error, usage: emptyUsage() };
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
