/**
 * Delivering a message to a session: start its run with the message (update-with-start) or, when
 * a run is live, signal it and read its answer; retried while the run is ending or a maintenance
 * task holds the session. At most one run is live per session.
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type Client,
  WithStartWorkflowOperation,
  WorkflowContinuedAsNewError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
} from "@temporalio/client";
import { ApplicationFailure } from "@temporalio/common";
import {
  type DeliverRequest,
  type DeliverResult,
  RUN_VERSION,
  type RunResult,
  type RunSettings,
  runWorkflowId,
  type SessionRef,
  startedStatus,
} from "../contracts/runs";
import { viewerLinkMarkdown } from "../viewer/links";
import { DeliveryRefusal, deliverSignal, deliverUpdate, deliveryQuery } from "../workflows/definitions";
import { type Workflows, WorkflowType } from "../workflows/references";
import { runAttributes } from "../workflows/search-attributes";
import { tenantPriority } from "./fairness";
import type { SessionRuns } from "./session-runs";

/** A delivery refused by the run (busy, queue full, ended, invalid): `type` says which. */
export class DeliveryRefusedError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
    this.name = "DeliveryRefusedError";
  }
}

/**
 * How a delivery went: the run's answer, or `pending` when the message reached a live run whose
 * workers did not answer within ANSWER_WAIT_MS (recorded by the server; the run takes it
 * when a worker picks it up).
 */
export type Delivered = { workflowId: string; runId: string } & (DeliverResult | { delivery: "pending" });

export interface DeliverOptions {
  /**
   * Id of the delivery: the update id when the message starts a run, the `deliverMessage` signal's
   * delivery id when it reaches a live run. A run takes an id once, so a retry with the same id gets
   * the first delivery's answer instead of delivering again (the API derives it from tenant +
   * `Idempotency-Key`). Default: a random id.
   */
  deliveryId?: string;
  /** How long to wait for a live run's answer before answering `pending`. */
  answerWaitMs?: number;
}

/**
 * How long an abort or a delivery to a live run waits for the run's answer. A polling worker
 * answers in well under a second; with every worker down the wait ends here and the caller is
 * told the message was recorded but not answered, so it is answered within seconds either way.
 */
export const ANSWER_WAIT_MS = 2_000;

/**
 * A message may find the session's workflow id held by a run that is just closing, or by a
 * maintenance task: it is tried again (with growing pauses) this many times before `RunBusy`.
 */
const ENDED_RUN_RETRIES = 5;

/** One try at a delivery: delivered, refused for good, or refused until the session is free. */
type DeliveryAttempt =
  | { kind: "delivered"; delivered: Delivered }
  | { kind: "refused"; refusal: DeliveryRefusedError }
  | { kind: "retry"; refusal: DeliveryRefusedError };

export class Delivery {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly runs: SessionRuns,
    private readonly apiPublicUrl?: string,
  ) {}

  /**
   * Starts a run with `request` (update-with-start), or, when the session's run is live, delivers it
   * to that run by signal and reads the run's answer by query: one run at most is live per session.
   * Throws DeliveryRefusedError when the run refuses. Never sends an update to a live run: one that
   * reaches it while its worker is dead can leave a history the SDK cannot replay.
   */
  async deliver(
    ref: SessionRef,
    request: DeliverRequest,
    settings: RunSettings,
    options: DeliverOptions = {},
  ): Promise<Delivered> {
    const deliveryId = options.deliveryId ?? `keel-delivery-${randomUUID()}`;
    if (options.deliveryId !== undefined) {
      const earlier = await this.deliveredToClosedRun(ref, deliveryId);
      if (earlier) return earlier;
    }
    for (let attempt = 0; ; attempt++) {
      const answer =
        (await this.startWith(ref, request, settings, deliveryId)) ??
        (await this.deliverLive(ref, request, deliveryId, options.answerWaitMs ?? ANSWER_WAIT_MS));
      if (answer.kind === "delivered") return answer.delivered;
      // The run is ending (or a maintenance task holds the session): it is then started anew.
      if (answer.kind === "retry" && attempt < ENDED_RUN_RETRIES) {
        await sleep(200 * (attempt + 1));
        continue;
      }
      throw answer.refusal;
    }
  }

  /**
   * The answer a closed run gave to this delivery id, read from its result (no worker needed): a
   * retry whose idempotency record was lost after the run closed is answered, not delivered again.
   * A start's update id Temporal answers itself; a message a live run took by signal only the run
   * remembers. A guard, not a gate: when Temporal cannot describe the session now, the delivery
   * goes on (it fails there too if Temporal is down; if not, only a retry whose record was lost
   * after its run closed could deliver twice).
   */
  private async deliveredToClosedRun(ref: SessionRef, deliveryId: string): Promise<Delivered | undefined> {
    try {
      const latest = await this.runs.describeLatest(ref);
      if (latest?.type !== WorkflowType.agentRun || latest.status.name !== "COMPLETED") return undefined;
      const result: RunResult = await this.runs.pinned(ref, latest.runId).result();
      const earlier = result.deliveries?.find((delivery) => delivery.updateId === deliveryId)?.result;
      return earlier && { ...earlier, workflowId: runWorkflowId(ref), runId: latest.runId };
    } catch {
      return undefined;
    }
  }

  /**
   * Starts the session's run with the delivery (update-with-start, which fails when an execution
   * holds the workflow id). Undefined when one does: the delivery then goes to it.
   */
  private async startWith(
    ref: SessionRef,
    request: DeliverRequest,
    settings: RunSettings,
    deliveryId: string,
  ): Promise<DeliveryAttempt | undefined> {
    const workflowId = runWorkflowId(ref);
    const startWorkflowOperation = new WithStartWorkflowOperation<Workflows["agentRun"]>(
      WorkflowType.agentRun,
      {
        workflowId,
        taskQueue: this.taskQueue,
        args: [{ ...ref, settings, runVersion: RUN_VERSION }],
        // Set with the start, the run does not upsert them again (an upsert is a billed Action).
        typedSearchAttributes: runAttributes({ ...ref, settings }, startedStatus(RUN_VERSION)),
        workflowIdConflictPolicy: "FAIL",
        priority: tenantPriority(ref.tenantId),
        staticSummary: summaryLine(request.text),
        // The Temporal UI shows it under "User Metadata": the way from the run to its transcript.
        ...(this.apiPublicUrl ? { staticDetails: viewerLinkMarkdown(this.apiPublicUrl, ref.sessionId) } : {}),
      },
    );
    try {
      const update = await this.client.workflow.startUpdateWithStart(deliverUpdate, {
        args: [request],
        startWorkflowOperation,
        // The handler answers synchronously: the acceptance response already carries the outcome.
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        updateId: deliveryId,
      });
      const result = await update.result();
      // The run that took the update, as the server named it: no describe() round trip.
      const runId = update.workflowRunId;
      if (runId === undefined) throw new Error("update-with-start answered without the run's id");
      return { kind: "delivered", delivered: { ...result, workflowId, runId } };
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) return undefined;
      const refusal = refusalOf(error);
      if (refusal) return refusalAttempt(refusal.type ?? DeliveryRefusal.invalid, refusal.message);
      throw error;
    }
  }

  /**
   * Delivers to the session's live run by the `deliverMessage` signal and reads its answer with the
   * `delivery` query (a query sent while the signal's workflow task is pending is answered after
   * it). `pending` when no worker answers within `waitMs`. A message the run hands over (it had
   * decided to end) is answered with the next execution's id when that has started within the
   * same `waitMs`, else with the ending run's.
   */
  private async deliverLive(
    ref: SessionRef,
    request: DeliverRequest,
    deliveryId: string,
    waitMs: number,
  ): Promise<DeliveryAttempt> {
    const live = await this.runs.liveRun(ref);
    if (live.kind !== "live") return busyAttempt(live.kind);
    const { handle, runId } = live;
    const sent = await this.runs.sendLive(handle, (pinned) =>
      pinned.signal(deliverSignal, { deliveryId, text: request.text, mode: request.mode }),
    );
    if (sent !== "sent") return busyAttempt("not-live");
    const workflowId = runWorkflowId(ref);
    const deadline = Date.now() + waitMs;
    const answer = await this.runs.askUntilSeen(deadline, () => handle.query(deliveryQuery, deliveryId));
    if (answer?.result) {
      // The run that reads a handed-over message is the session's next execution.
      const reader = answer.result.handedOver ? await this.continuedAs(ref, runId, deadline) : undefined;
      return { kind: "delivered", delivered: { ...answer.result, workflowId, runId: reader ?? runId } };
    }
    if (answer?.refusal) return refusalAttempt(answer.refusal.type, answer.refusal.message);
    return { kind: "delivered", delivered: { delivery: "pending", workflowId, runId } };
  }

  /**
   * The id of the execution `runId` continues as, once it has (by `deadline`); undefined when it
   * has not by then or closed otherwise. Never throws.
   */
  private async continuedAs(ref: SessionRef, runId: string, deadline: number): Promise<string | undefined> {
    try {
      await this.client.withDeadline(deadline, () => this.runs.pinned(ref, runId).result());
    } catch (error) {
      if (error instanceof WorkflowContinuedAsNewError) return error.newExecutionRunId;
    }
    return undefined;
  }
}

function refusalAttempt(type: string, message: string): DeliveryAttempt {
  const refusal = new DeliveryRefusedError(type, message);
  return type === DeliveryRefusal.ended ? { kind: "retry", refusal } : { kind: "refused", refusal };
}

/**
 * The workflow id is held by no live run: the run closed a moment ago (start anew) or a
 * maintenance task (branch, compact, label) holds it (wait for it).
 */
function busyAttempt(kind: "not-live" | "no-run"): DeliveryAttempt {
  const message =
    kind === "no-run"
      ? "the session's run could not be started; send again"
      : "the session is busy (its run is ending, or a branch, compaction or label is running); send again";
  return { kind: "retry", refusal: new DeliveryRefusedError(DeliveryRefusal.busy, message) };
}

function refusalOf(error: unknown): ApplicationFailure | undefined {
  const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
  if (
    cause instanceof ApplicationFailure &&
    Object.values<string>(DeliveryRefusal).includes(cause.type ?? "")
  ) {
    return cause;
  }
  return undefined;
}

function summaryLine(text: string): string {
  const first = text.split("\n", 1)[0] ?? "";
  return first.length > 120 ? `${first.slice(0, 117)}...` : first;
}
