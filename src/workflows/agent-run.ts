/**
 * The run workflow: one execution is one agent run on one session (prompt → turns → end).
 *
 * Temporal holds control flow, S3 holds data: this code assigns entry slots (sequence number,
 * id, parent), decides what happens next and keeps small counters. Every effect is an activity
 * that reads the conversation from the session store and writes its entry at the slot it was
 * given, so a retried activity adopts what an earlier attempt stored.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from "@temporalio/workflow";
import type {
  EntrySlot,
  EntryWrite,
  KeelActivities,
  LlmTurnResult,
  ToolCallSummary,
} from "../activities/types";
import { type AgentEventBody, appendEvent, createEventBuffer, eventsAfter } from "../core/events";
import { makeEntryId } from "../core/ids";
import { type AssistantMessage, emptyUsage, type ToolResultMessage, type Usage } from "../core/messages";
import {
  createQueue,
  decideDelivery,
  drain,
  enqueue,
  type MessageQueue,
  type QueueMode,
} from "../core/queues";
import { ABORTED_TOOL_RESULT_TEXT } from "../core/sanitize";
import { createMessageEntry } from "../core/session-entries";
import type { ToolCallState } from "../core/tool-registry";
import {
  abortSignal,
  approveSignal,
  DeliveryRefusal,
  deliverUpdate,
  eventsQuery,
  stateQuery,
} from "./definitions";
import {
  blockReason,
  hooksNamed,
  type NextTurnSettings,
  nextTurnSettings,
  stopReasonAfterTurn,
  type TurnOutcome,
} from "./hooks";
import { EMPTY_RESPONSE_NUDGE, INTERRUPTED_MARKER, INTERRUPTED_TOOL_RESULT_TEXT } from "./markers";
import { decidePolicy } from "./policy";
import { ModelAttribute, RunStatusAttribute, SessionAttribute, TenantAttribute } from "./search-attributes";
import type {
  ApprovalDecision,
  CarriedState,
  DeliverRequest,
  DeliverResult,
  PendingToolCall,
  QueuedMessage,
  RunInput,
  RunResult,
  RunState,
  RunStatus,
  RunTimeouts,
  SessionCursor,
} from "./types";
import { sessionCwd } from "./types";

/** Signals and updates accepted before continuing as new, below Temporal's per-run caps (10k / 2k). */
const MAX_SIGNALS_PER_EXECUTION = 9_000;
const MAX_UPDATES_PER_EXECUTION = 1_800;
const PREVIEW_CHARS = 200;

const storage = proxyActivities<KeelActivities>({
  startToCloseTimeout: "1 minute",
  retry: {
    initialInterval: "1 second",
    backoffCoefficient: 2,
    maximumInterval: "30 seconds",
    maximumAttempts: 30,
  },
});

/** Chat notifications are posted at most once (the activity guards it): no retries beyond that. */
const replies = proxyActivities<KeelActivities>({
  startToCloseTimeout: "1 minute",
  retry: { maximumAttempts: 3 },
});

const claim = proxyActivities<KeelActivities>({
  startToCloseTimeout: "5 minutes",
  retry: { initialInterval: "1 second", maximumAttempts: 10 },
});

/** Model calls (turns, compaction): retried with backoff on rate limits, 5xx and network errors. */
function llmActivities(timeouts: RunTimeouts) {
  return proxyActivities<KeelActivities>({
    // Fits a 15-minute Lambda worker; long generations keep the activity alive by heartbeats.
    startToCloseTimeout: "10 minutes",
    heartbeatTimeout: timeouts.heartbeatMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: "2 seconds",
      backoffCoefficient: 2,
      maximumInterval: "1 minute",
      maximumAttempts: 8,
      nonRetryableErrorTypes: ["NonRetryableLlmError", "UnknownModel", "EntryConflict"],
    },
  });
}

/** Tool activities run on the worker that holds the session's workspace (its own task queue). */
function toolActivities(taskQueue: string, timeouts: RunTimeouts) {
  return proxyActivities<KeelActivities>({
    taskQueue,
    // A dead worker leaves the task unclaimed: give up soon and move the workspace.
    scheduleToStartTimeout: timeouts.toolScheduleToStartMs,
    startToCloseTimeout: "15 minutes",
    heartbeatTimeout: timeouts.heartbeatMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: "1 second",
      backoffCoefficient: 2,
      maximumAttempts: 5,
      nonRetryableErrorTypes: ["EntryConflict"],
    },
  });
}

interface OpenCall {
  summary: ToolCallSummary;
  slot: EntrySlot;
  state: PendingToolCall["state"];
}

/** Why the current in-flight work is being cancelled. */
type Cancelling = { kind: "abort"; reason: string } | { kind: "interrupt" };

export async function agentRun(input: RunInput): Promise<RunResult> {
  const { tenantId, sessionId, settings } = input;
  const ref = { tenantId, sessionId };
  const carried = input.carried;
  const llm = llmActivities(settings.timeouts);
  const hooks = hooksNamed(settings.hooks ?? []);
  /** Model and thinking level of the next call; hooks may change them between turns. */
  let next: NextTurnSettings = carried?.next ?? {
    model: settings.model,
    thinkingLevel: settings.thinkingLevel,
  };
  /** Tool calls of the current turn that ended in an error (for hooks). */
  let failedToolCalls = 0;

  let status: RunStatus = carried ? "running" : "starting";
  /** True once a message started this run: later messages are steered, queued or refused. */
  let begun = carried !== undefined;
  let cursor: SessionCursor | undefined = carried?.cursor;
  let turn = carried?.turn ?? 0;
  const turnAtStart = turn;
  let toolCallCount = carried?.toolCallCount ?? 0;
  let usage: Usage = carried?.usage ?? emptyUsage();
  let emptyResponses = carried?.emptyResponses ?? 0;
  const refill = (mode: QueueMode, items: QueuedMessage[] = []) => ({
    ...createQueue<QueuedMessage>(mode, settings.queueLimit),
    items: [...items],
  });
  let steering: MessageQueue<QueuedMessage> = refill(settings.steeringMode, carried?.steering);
  let followUp: MessageQueue<QueuedMessage> = refill(settings.followUpMode, carried?.followUp);
  /** Messages that open the next turn whatever the queue modes say (first prompt, interrupts, nudges). */
  let pending: MessageQueue<QueuedMessage> = refill("all", carried?.pending);
  let events = createEventBuffer(undefined, carried?.nextEventSeq ?? 1);
  const openCalls = new Map<string, OpenCall>();
  const decisions = new Map<string, ApprovalDecision>();
  let abortReason: string | undefined;
  let cancelling: Cancelling | undefined;
  let inFlight: CancellationScope | undefined;
  let lastAssistantText = "";
  let endReason: string | undefined;
  let ended = false;
  let workspaceQueue: string | undefined;
  let signalsSeen = 0;
  let updatesSeen = 0;

  const emit = (event: AgentEventBody) => {
    events = appendEvent(events, event).buffer;
  };
  const queued = () => pending.items.length + steering.items.length + followUp.items.length;
  /** Adds to a queue whose bound the update validator already checked. */
  const accept = (queue: MessageQueue<QueuedMessage>, message: QueuedMessage) => {
    const result = enqueue(queue, message);
    if (!result.ok) throw ApplicationFailure.nonRetryable("the queue is full", DeliveryRefusal.queueFull);
    return result.queue;
  };
  /** Drains a queue by its mode (pending always drains whole). */
  const take = (name: "pending" | "steering" | "followUp"): QueuedMessage[] => {
    const queue = name === "pending" ? pending : name === "steering" ? steering : followUp;
    const { taken, queue: rest } = drain(queue);
    if (name === "pending") pending = rest;
    else if (name === "steering") steering = rest;
    else followUp = rest;
    return taken;
  };
  const newSlot = (): EntrySlot => {
    if (!cursor) throw new Error("session not opened");
    const slot: EntrySlot = {
      seq: cursor.nextSeq,
      id: makeEntryId(Math.random),
      parentId: cursor.leafId,
      timestamp: new Date().toISOString(),
    };
    cursor = { nextSeq: slot.seq + 1, leafId: slot.id };
    return slot;
  };

  const publishDetails = () => {
    const cost = usage.cost.total.toFixed(4);
    const last = lastAssistantText ? `\n\n${lastAssistantText.slice(0, PREVIEW_CHARS)}` : "";
    setCurrentDetails(
      `**${status}** · turn ${turn} · ${toolCallCount} tool calls · ${usage.totalTokens} tokens · $${cost}${last}`,
    );
  };
  const setStatus = (next: RunStatus) => {
    status = next;
    upsertSearchAttributes([{ key: RunStatusAttribute, value: next }]);
    publishDetails();
  };

  upsertSearchAttributes([
    { key: TenantAttribute, value: tenantId },
    { key: SessionAttribute, value: sessionId },
    { key: ModelAttribute, value: settings.model },
    { key: RunStatusAttribute, value: status },
  ]);

  /** `auto` steers a live run; the first message of a run starts it. */
  const deliveryDecision = (request: DeliverRequest) =>
    decideDelivery(request.mode === "auto" ? "steer" : request.mode, begun);

  setHandler(
    deliverUpdate,
    (request: DeliverRequest): DeliverResult => {
      updatesSeen += 1;
      const message: QueuedMessage = { text: request.text, acceptedAt: Date.now() };
      const decision = deliveryDecision(request);
      switch (decision.action) {
        case "start_run":
          begun = true;
          pending = accept(pending, message);
          return { delivery: "started", queueLength: pending.items.length };
        case "interrupt":
          pending = accept(pending, message);
          if (inFlight && !cancelling) {
            cancelling = { kind: "interrupt" };
            inFlight.cancel();
          }
          return { delivery: "interrupted", queueLength: pending.items.length };
        case "enqueue":
          if (decision.queue === "followUp") {
            followUp = accept(followUp, message);
            return { delivery: "queued", queueLength: followUp.items.length };
          }
          steering = accept(steering, message);
          return { delivery: "steered", queueLength: steering.items.length };
        case "refuse":
          // The validator refuses these before the handler runs.
          throw ApplicationFailure.nonRetryable("the session is busy with a run", DeliveryRefusal.busy);
      }
    },
    {
      validator: (request: DeliverRequest) => {
        if (typeof request?.text !== "string" || request.text.trim() === "") {
          throw ApplicationFailure.nonRetryable("message text is empty", DeliveryRefusal.invalid);
        }
        if (ended || abortReason !== undefined) {
          throw ApplicationFailure.nonRetryable(
            "the run has ended; send again to start a new one",
            DeliveryRefusal.ended,
          );
        }
        const decision = deliveryDecision(request);
        if (decision.action === "refuse") {
          throw ApplicationFailure.nonRetryable("the session is busy with a run", DeliveryRefusal.busy);
        }
        const target =
          decision.action === "enqueue" ? (decision.queue === "followUp" ? followUp : steering) : pending;
        if (target.items.length >= target.capacity) {
          throw ApplicationFailure.nonRetryable(
            `the queue is full (${target.capacity} messages waiting)`,
            DeliveryRefusal.queueFull,
          );
        }
      },
    },
  );

  setHandler(abortSignal, (reason: string) => {
    signalsSeen += 1;
    if (ended || abortReason !== undefined) return;
    abortReason = reason || "aborted by user";
    if (inFlight) {
      cancelling = { kind: "abort", reason: abortReason };
      inFlight.cancel();
    }
  });

  setHandler(approveSignal, (decision: ApprovalDecision) => {
    signalsSeen += 1;
    const call = openCalls.get(decision.toolCallId);
    if (call?.state === "awaiting_approval") decisions.set(decision.toolCallId, decision);
  });

  setHandler(
    stateQuery,
    (): RunState => ({
      status,
      turn,
      toolCallCount,
      leafId: cursor?.leafId ?? null,
      nextSeq: cursor?.nextSeq ?? 0,
      usage,
      queues: { steering: steering.items.length, followUp: followUp.items.length },
      pendingToolCalls: [...openCalls.values()].map((call) => ({
        toolCallId: call.summary.id,
        name: call.summary.name,
        state: call.state,
        argumentsPreview: call.summary.argumentsPreview,
      })),
      lastAssistantText: lastAssistantText.slice(0, 2_000),
      endReason,
      lastEventSeq: events.nextSeq - 1,
    }),
  );

  setHandler(eventsQuery, (afterSeq: number) => eventsAfter(events, afterSeq).events);

  /** Runs in-flight work in a scope that abort and interrupt can cancel. */
  async function cancellable<T>(work: () => Promise<T>): Promise<T> {
    const scope = new CancellationScope();
    inFlight = scope;
    try {
      return await scope.run(work);
    } finally {
      inFlight = undefined;
    }
  }

  /** Writes entries in a scope that cannot be cancelled: closing a session must finish. */
  function writeEntries(writes: EntryWrite[]): Promise<unknown> {
    if (writes.length === 0) return Promise.resolve();
    return CancellationScope.nonCancellable(() => storage.appendEntries({ ...ref, writes }));
  }

  function userWrite(message: QueuedMessage): EntryWrite {
    const slot = newSlot();
    const entry = createMessageEntry(slot, {
      role: "user",
      content: message.text,
      timestamp: message.acceptedAt,
    });
    emit({ type: "message_start", role: "user", entryId: slot.id });
    emit({ type: "message_end", role: "user", entryId: slot.id });
    return { seq: slot.seq, entry };
  }

  function syntheticToolResult(call: OpenCall, text: string): EntryWrite {
    const message: ToolResultMessage = {
      role: "toolResult",
      toolCallId: call.summary.id,
      toolName: call.summary.name,
      content: [{ type: "text", text }],
      isError: true,
      timestamp: Date.now(),
    };
    return { seq: call.slot.seq, entry: createMessageEntry(call.slot, message) };
  }

  function interruptedAssistant(slot: EntrySlot): EntryWrite {
    const message: AssistantMessage = {
      role: "assistant",
      content: [{ type: "text", text: INTERRUPTED_MARKER }],
      api: "keel",
      provider: "keel",
      model: settings.model,
      usage: emptyUsage(),
      stopReason: "aborted",
      errorMessage: "interrupted before the model answered",
      timestamp: Date.now(),
    };
    return { seq: slot.seq, entry: createMessageEntry(slot, message) };
  }

  /** Closes every open tool call with a synthetic result (a stored result, if any, is kept). */
  async function closeOpenCalls(text: string): Promise<void> {
    const writes = [...openCalls.values()].map((call) => syntheticToolResult(call, text));
    await writeEntries(writes);
    for (const call of [...openCalls.values()]) endCall(call, "cancelled", true);
  }

  function endCall(call: OpenCall, state: ToolCallState, isError: boolean): void {
    openCalls.delete(call.summary.id);
    if (isError) failedToolCalls += 1;
    emit({
      type: "tool_execution_end",
      toolCallId: call.summary.id,
      toolName: call.summary.name,
      state,
      isError,
    });
  }

  async function workspaceTaskQueue(): Promise<string> {
    workspaceQueue ??= (await claim.claimWorkspace({ ...ref, source: settings.workspace })).taskQueue;
    return workspaceQueue;
  }

  function isScheduleToStartTimeout(error: unknown): boolean {
    return (
      error instanceof ActivityFailure &&
      error.cause instanceof TimeoutFailure &&
      error.cause.timeoutType === "SCHEDULE_TO_START"
    );
  }

  /** Executes one approved tool call on the workspace's worker; moves the workspace if that worker is gone. */
  async function executeCall(
    call: OpenCall,
    assistantSeq: number,
    args?: Record<string, unknown>,
  ): Promise<void> {
    call.state = "running";
    emit({ type: "tool_execution_start", toolCallId: call.summary.id, toolName: call.summary.name });
    for (let attempt = 0; ; attempt++) {
      const queue = await workspaceTaskQueue();
      try {
        const result = await toolActivities(queue, settings.timeouts).executeTool.executeWithOptions(
          { summary: toolSummary(call.summary) },
          [
            {
              ...ref,
              assistantSeq,
              toolCallId: call.summary.id,
              toolName: call.summary.name,
              argumentsOverride: args,
              slot: call.slot,
            },
          ],
        );
        endCall(call, result.isError ? "failed" : "completed", result.isError);
        return;
      } catch (error) {
        if (isScheduleToStartTimeout(error) && attempt < 3) {
          workspaceQueue = undefined;
          continue;
        }
        throw error;
      }
    }
  }

  /** Policy, approval and execution of one tool call; a refusal becomes an error result the model reads. */
  async function handleCall(call: OpenCall, assistantSeq: number): Promise<void> {
    const action = decidePolicy(settings.policy, call.summary.name, call.summary.argumentsPreview);
    let args: Record<string, unknown> | undefined;
    if (action === "deny") {
      await writeEntries([
        syntheticToolResult(call, `Tool call denied by policy: ${call.summary.name} is not allowed.`),
      ]);
      endCall(call, "failed", true);
      return;
    }
    if (action === "ask") {
      call.state = "awaiting_approval";
      setStatus("waiting_approval");
      emit({
        type: "approval_requested",
        toolCallId: call.summary.id,
        toolName: call.summary.name,
        args: argumentsFromPreview(call.summary.argumentsPreview),
      });
      const decided = await condition(
        () => decisions.has(call.summary.id) || abortReason !== undefined,
        settings.policy.approvalTimeoutMs,
      );
      if (abortReason !== undefined) return;
      const decision = decisions.get(call.summary.id);
      decisions.delete(call.summary.id);
      if ([...openCalls.values()].every((open) => open.state !== "awaiting_approval" || open === call)) {
        setStatus("running");
      }
      emit({
        type: "approval_resolved",
        toolCallId: call.summary.id,
        decision:
          !decided || !decision ? "timed_out" : decision.decision === "approve" ? "approved" : "denied",
        ...(decision?.arguments ? { editedArgs: decision.arguments } : {}),
      });
      if (!decided || !decision || decision.decision === "reject") {
        const why = !decided
          ? "no decision arrived before the approval timeout"
          : `rejected by the user${decision?.reason ? `: ${decision.reason}` : ""}`;
        await writeEntries([syntheticToolResult(call, `Tool call not executed: ${why}.`)]);
        endCall(call, "failed", true);
        return;
      }
      args = decision.arguments;
    }
    const blocked = blockReason(hooks, call.summary);
    if (blocked) {
      await writeEntries([syntheticToolResult(call, `Tool call blocked: ${blocked}.`)]);
      endCall(call, "failed", true);
      return;
    }
    await executeCall(call, assistantSeq, args);
  }

  async function runTools(calls: ToolCallSummary[], assistantSeq: number): Promise<void> {
    // Slots in source order before anything runs: results are recorded in that order whatever
    // order parallel executions finish in.
    const batch = calls.map((summary) => {
      const call: OpenCall = { summary, slot: newSlot(), state: "pending" };
      openCalls.set(summary.id, call);
      return call;
    });
    toolCallCount += batch.length;
    await cancellable(async () => {
      if (settings.toolExecution === "parallel") {
        await Promise.all(batch.map((call) => handleCall(call, assistantSeq)));
      } else {
        for (const call of batch) await handleCall(call, assistantSeq);
      }
    });
  }

  function callModel(slot: EntrySlot, writesFirst: EntryWrite[]): Promise<LlmTurnResult> {
    emit({ type: "message_start", role: "assistant", entryId: slot.id });
    return cancellable(() =>
      llm.llmTurn.executeWithOptions({ summary: `llm ${next.model} turn ${turn}` }, [
        {
          ...ref,
          turn,
          model: next.model,
          systemPrompt: settings.systemPrompt,
          thinkingLevel: next.thinkingLevel,
          tools: settings.tools,
          writesFirst,
          slot,
        },
      ]),
    );
  }

  async function compactNow(reason: "threshold" | "overflow"): Promise<void> {
    emit({ type: "compaction_start", reason, tokensBefore: lastContextTokens });
    const slot = newSlot();
    const result = await CancellationScope.nonCancellable(() =>
      llm.compact.executeWithOptions({ summary: `compact ${next.model} (${reason})` }, [
        {
          ...ref,
          model: next.model,
          reserveTokens: settings.compaction.reserveTokens,
          keepRecentTokens: settings.compaction.keepRecentTokens,
          slot,
        },
      ]),
    );
    if (!result.compacted) {
      // Nothing was written at the slot: hand it back.
      cursor = { nextSeq: slot.seq, leafId: slot.parentId };
    }
    emit({
      type: "compaction_end",
      tokensBefore: result.tokensBefore,
      ...(result.compacted ? { entryId: slot.id } : { error: result.reason }),
    });
  }

  /** Ends the run: no message is accepted from here on; a chat thread gets the answer. */
  async function finish(final: RunResult["status"], reason: string): Promise<RunResult> {
    endReason = reason;
    ended = true;
    setStatus(final);
    emit({ type: "agent_end", status: final, reason, usage });
    if (settings.chatReply) {
      const target = settings.chatReply;
      try {
        await CancellationScope.nonCancellable(() =>
          replies.postChatReply({ ...ref, target, runId: workflowInfo().runId, status: final, reason }),
        );
      } catch (error) {
        // The session and the run's outcome stand; only the notification was lost.
        log.warn("posting the run's answer to chat failed", { error: String(error) });
      }
    }
    return {
      status: final,
      reason,
      turns: turn,
      usage,
      leafId: cursor?.leafId ?? null,
      nextSeq: cursor?.nextSeq ?? 0,
    };
  }

  async function abortRun(): Promise<RunResult> {
    await closeOpenCalls(ABORTED_TOOL_RESULT_TEXT);
    return finish("aborted", abortReason ?? "aborted");
  }

  function carry(): CarriedState {
    if (!cursor) throw new Error("session not opened");
    return {
      cursor,
      turn,
      next,
      needsModel,
      contextTokens: lastContextTokens,
      contextWindow,
      toolCallCount,
      usage,
      steering: steering.items,
      followUp: followUp.items,
      pending: pending.items,
      nextEventSeq: events.nextSeq,
      emptyResponses,
    };
  }

  // ---- the run ----------------------------------------------------------------------------
  let lastContextTokens = carried?.contextTokens ?? 0;
  let contextWindow = carried?.contextWindow ?? 0;
  /** Tool results are waiting for the model. */
  let needsModel = carried?.needsModel ?? false;
  await condition(() => queued() > 0 || needsModel || abortReason !== undefined);
  if (abortReason !== undefined && !cursor) return finish("aborted", abortReason);
  cursor ??= await storage.openSession({ ...ref, cwd: sessionCwd(ref) });
  if (!carried) emit({ type: "agent_start", runId: workflowInfo().runId });
  setStatus("running");

  let overflowRetried = false;

  for (;;) {
    if (abortReason !== undefined) return abortRun();

    // Turn boundary: what opens the next turn.
    let inputs = take("pending");
    inputs.push(...take("steering"));
    if (inputs.length === 0 && !needsModel) {
      inputs = take("followUp");
      if (inputs.length === 0) {
        await condition(allHandlersFinished);
        if (queued() === 0 && abortReason === undefined) {
          return finish("completed", lastAssistantText ? "the agent finished" : "nothing to do");
        }
        continue;
      }
    }

    if (turn >= settings.limits.maxTurns)
      return finish("completed", `turn limit reached (${settings.limits.maxTurns})`);
    if (
      workflowInfo().continueAsNewSuggested ||
      turn - turnAtStart >= settings.limits.turnsPerExecution ||
      signalsSeen > MAX_SIGNALS_PER_EXECUTION ||
      updatesSeen > MAX_UPDATES_PER_EXECUTION
    ) {
      pending = { ...pending, items: [...inputs, ...pending.items] };
      await condition(allHandlersFinished);
      return continueAsNew<typeof agentRun>({ ...input, carried: carry() });
    }

    turn += 1;
    failedToolCalls = 0;
    emit({ type: "turn_start", turn });
    publishDetails();
    const writesFirst = inputs.map(userWrite);

    if (
      settings.compaction.enabled &&
      contextWindow > 0 &&
      lastContextTokens > contextWindow - settings.compaction.reserveTokens
    ) {
      await writeEntries(writesFirst.splice(0));
      await compactNow("threshold");
    }

    const slot = newSlot();
    let result: LlmTurnResult;
    try {
      result = await callModel(slot, writesFirst);
    } catch (error) {
      if (!isCancellation(error) || !cancelling) throw error;
      const why = cancelling;
      cancelling = undefined;
      // The user messages and the partial answer are stored if the activity got that far; the
      // writes below fill whatever it did not (a stored entry is kept as it is).
      await writeEntries([...writesFirst, interruptedAssistant(slot)]);
      emit({ type: "message_end", role: "assistant", entryId: slot.id });
      if (why.kind === "abort") return abortRun();
      needsModel = false;
      continue;
    }
    usage = addUsage(usage, result);
    lastContextTokens = result.contextTokens;
    contextWindow = result.contextWindow;
    lastAssistantText = result.textPreview || lastAssistantText;
    emit({ type: "message_end", role: "assistant", entryId: slot.id });

    if (result.errorKind === "context_overflow") {
      // Nothing was stored at the slot; compact and ask again once.
      cursor = { nextSeq: slot.seq, leafId: slot.parentId };
      if (overflowRetried || !settings.compaction.enabled) {
        return finish(
          "failed",
          `context overflow: ${result.errorMessage ?? "the model's context window is full"}`,
        );
      }
      overflowRetried = true;
      await compactNow("overflow");
      needsModel = true;
      turn -= 1;
      continue;
    }
    overflowRetried = false;
    if (result.errorKind === "non_retryable") {
      return finish("failed", `model error: ${result.errorMessage ?? "unknown"}`);
    }

    if (result.toolCalls.length === 0 && !result.textPreview.trim()) {
      emptyResponses += 1;
      if (emptyResponses > settings.maxEmptyResponses) {
        return finish("failed", `the model returned ${emptyResponses} empty responses in a row`);
      }
      pending = {
        ...pending,
        items: [...pending.items, { text: EMPTY_RESPONSE_NUDGE, acceptedAt: Date.now() }],
      };
      emit({ type: "turn_end", turn, stopReason: result.stopReason });
      continue;
    }
    emptyResponses = 0;

    if (result.toolCalls.length > 0) {
      try {
        await runTools(result.toolCalls, slot.seq);
      } catch (error) {
        if (!isCancellation(error) || !cancelling) throw error;
        const why = cancelling;
        cancelling = undefined;
        if (why.kind === "abort") return abortRun();
        await closeOpenCalls(INTERRUPTED_TOOL_RESULT_TEXT);
      }
      if (abortReason !== undefined) return abortRun();
      needsModel = true;
    } else {
      needsModel = false;
    }
    emit({ type: "turn_end", turn, stopReason: result.stopReason });

    const outcome: TurnOutcome = {
      turn,
      stopReason: result.stopReason,
      text: result.textPreview,
      toolCalls: result.toolCalls,
      failedToolCalls,
    };
    const stopReason = stopReasonAfterTurn(hooks, outcome);
    if (stopReason) return finish("completed", stopReason);
    next = nextTurnSettings(hooks, outcome, next);

    if (toolCallCount >= settings.limits.maxToolCalls && needsModel) {
      return finish("completed", `tool call limit reached (${settings.limits.maxToolCalls})`);
    }
    if (settings.limits.maxCostUsd > 0 && usage.cost.total >= settings.limits.maxCostUsd) {
      return finish("completed", `cost budget reached ($${settings.limits.maxCostUsd})`);
    }
  }
}

function addUsage(total: Usage, turn: LlmTurnResult): Usage {
  const add = turn.usage;
  return {
    input: total.input + add.input,
    output: total.output + add.output,
    cacheRead: total.cacheRead + add.cacheRead,
    cacheWrite: total.cacheWrite + add.cacheWrite,
    totalTokens: total.totalTokens + add.totalTokens,
    cost: {
      input: total.cost.input + add.cost.input,
      output: total.cost.output + add.cost.output,
      cacheRead: total.cost.cacheRead + add.cost.cacheRead,
      cacheWrite: total.cost.cacheWrite + add.cost.cacheWrite,
      total: total.cost.total + add.cost.total,
    },
  };
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
