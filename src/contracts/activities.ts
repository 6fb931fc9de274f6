// Over 400 lines: every activity's input and result, the workflows' whole contract with their activities, kept in one file so it reads as one.
/**
 * The activities' contract with the run workflow. Inputs name a session, entry placements and
 * settings — never the conversation, which activities read from the session store — and results
 * are short summaries, so workflow history stays a few KB per turn however long the session.
 */
import type { LiveEvent } from "../core/events";
import type { Usage } from "../core/messages";
import type { ChatReplyTarget, SessionCursor } from "../core/run-types";
import type { SessionRef } from "../core/session-ref";
import type { SessionEntry } from "../core/session-types";
import type { McpServerSettings, McpToolList, McpToolsOfTurn } from "../mcp/types";
import type { FailoverReason } from "../providers/errors";
import type { ThinkingLevel } from "../providers/types";
import type { Isolation, NetworkPolicy } from "../tools/sandbox";
import type { ReplayClass } from "../tools/types";
import type { WorkspaceSource } from "../tools/workspace";
import type { RunPause, TenantBudgetHold } from "./pause";
import type { RunSettings } from "./runs";
import type { UnclaimedWhy } from "./unclaimed";

/** A sequence number and an entry to write there (conditional create; a retry adopts). */
import type { WebhookActivities } from "./webhooks";

export interface EntryWrite {
  seq: number;
  entry: SessionEntry;
}

/** Where an activity writes the entry it produces; assigned by the workflow beforehand. */
export interface EntrySlot {
  seq: number;
  id: string;
  parentId: string | null;
  /** ISO 8601. */
  timestamp: string;
}

export interface OpenSessionInput extends SessionRef {
  /** Working directory recorded in a new session's header. */
  cwd: string;
  /** The session a sub-agent's session was started from (its header's `parentSession`). */
  parentSession?: string;
}

export interface OpenSessionResult extends SessionCursor {
  /** This call created the session: it has no entries and no workspace snapshots. */
  created?: boolean;
  /**
   * The webhook event types the tenant's endpoints take (docs/integrations.md, "Webhooks"):
   * the run emits only these. Absent: none (and for a sub-agent's session, always absent).
   */
  webhookEvents?: string[];
}

export interface AppendEntriesInput extends SessionRef {
  writes: EntryWrite[];
}

export interface AppendEntriesResult {
  written: number;
  adopted: number;
  /** Seqs where this very entry (same id) was stored first, by an activity; absent in older results. */
  adoptedSeqs?: number[];
  /** Those of `adoptedSeqs` that are tool results with `isError` (a command an abort cut off). */
  adoptedErrorSeqs?: number[];
}

export interface ClaimWorkspaceInput extends SessionRef {
  /** What a new workspace starts from (an existing one is kept as it is). */
  source?: WorkspaceSource;
  /**
   * The run's leaf entry: when the workspace is not on this worker's disk and a snapshot exists
   * for this entry or its nearest snapshotted ancestor, that state is restored instead of `source`.
   */
  leafId?: string;
  /**
   * The run's first claim of a session its own `openSession` created: no snapshot can exist, so
   * the first attempt does not look for one (two S3 listings). A retried attempt looks: an earlier
   * attempt may have recorded the source's files.
   */
  newSession?: boolean;
}

export interface ClaimWorkspaceResult {
  /** Task queue of the worker that now holds the session's workspace. */
  taskQueue: string;
  /**
   * How this worker isolates tool processes, when it claimed the workspace itself (absent when
   * another worker already holds it). "off" is to be shown in the run's details.
   */
  sandbox?: Isolation;
  /** The workspace was restored from the snapshot recorded after this entry. */
  restoredFrom?: string;
}

export interface SnapshotWorkspaceInput extends SessionRef {
  /** The entry the snapshot follows: the last tool result of the batch. */
  afterEntryId: string;
  afterSeq: number;
}

export interface SnapshotWorkspaceResult {
  /** An earlier attempt had recorded it: nothing was uploaded. */
  adopted: boolean;
  /** Root tree hash: the state's name. */
  root: string;
  files: number;
  bytes: number;
  uploadedObjects: number;
  uploadedBytes: number;
}

export interface RestoreWorkspaceInput {
  /** The session whose workspace (on this worker) is replaced. */
  ref: SessionRef;
  /** The entry whose state is restored (its nearest snapshotted ancestor's). */
  entryId: string;
  /** For a fork: the session the entry and its snapshots belong to (default `ref`). */
  from?: SessionRef;
}

export interface RestoreWorkspaceResult {
  /** False when no snapshot exists for the entry or any ancestor: the workspace is unchanged. */
  restored: boolean;
  snapshotEntryId?: string;
  files?: number;
  bytes?: number;
}

/** `mcpTools`: MCP tools the model may call (the run's recorded list; absent: none), or `mcpToolRefs`
 * when every listing was stored by digest (the activity reads the tools). */
export interface LlmTurnInput extends SessionRef, McpToolsOfTurn {
  turn: number;
  model: string;
  systemPrompt?: string;
  thinkingLevel: ThinkingLevel;
  tools: string[];
  /** The agents the `task` tool offers (when `tools` names it): names and descriptions. */
  agents?: { name: string; description: string }[];
  /** Entries written before the call (user messages of this turn), in order. */
  writesFirst: EntryWrite[];
  /** The assistant entry this call produces; its parent is the context's leaf. */
  slot: EntrySlot;
  /**
   * The run has models to fail over to (a list): the call is not sent while its provider's
   * circuit breaker is open, and an error that leaves the breaker open is not retried.
   */
  canFailOver?: boolean;
  /**
   * The run switched to `model` for this call: a `model_change` entry (with the model's provider)
   * is written here right before the call's answer (nothing when the call fails); `slot`'s parent
   * is this entry.
   */
  modelChange?: EntrySlot;
}

/**
 * The details of a model call's failure (its `ApplicationFailure.details[0]`): why the run may
 * take the turn to its next model (providers/errors.ts `failoverReasonOf`), absent for an error
 * no other model would fix.
 */
export interface ModelCallFailureDetails {
  failover?: FailoverReason;
}

export interface ToolCallSummary {
  id: string;
  name: string;
  /** Shortened JSON of the arguments; the full arguments stay in the stored entry. */
  argumentsPreview: string;
  /** The call in a few words for people (`npm test` for bash, the path for read). */
  label: string;
}

type LlmErrorKind = "non_retryable" | "context_overflow";

export interface LlmTurnResult {
  stopReason: "stop" | "length" | "toolUse" | "error" | "aborted";
  /** The entry was already stored by an earlier attempt: the model was not called again. */
  adopted: boolean;
  usage: Usage;
  /** Tokens of the context the model saw (input side of the usage). */
  contextTokens: number;
  contextWindow: number;
  textPreview: string;
  toolCalls: ToolCallSummary[];
  errorKind?: LlmErrorKind;
  errorMessage?: string;
  /**
   * A context overflow is stored at the slot (with its usage) rather than handed back: the slot
   * stays taken. Absent in results recorded before overflows were stored.
   */
  overflowStored?: boolean;
  /** Live events the attempt had not sent when it ended; the run publishes them (see `LiveEventSink.settle`). */
  live?: LiveEvent[];
  /** The tenant has used up a token or cost budget (as of this call): the run pauses before its next turn. */
  tenantBudget?: TenantBudgetHold;
}

export interface ExecuteToolInput extends SessionRef {
  /** Sequence number of the assistant entry holding the tool call (its arguments are read there). */
  assistantSeq: number;
  toolCallId: string;
  toolName: string;
  /** Arguments edited at approval; replace the model's. */
  argumentsOverride?: Record<string, unknown>;
  slot: EntrySlot;
  /** The run's network policy for processes the tool starts (RunSettings.network; default "none"). */
  network?: NetworkPolicy;
  /** The run's tenant secrets (RunSettings.secrets), by name: resolved by the activity, never in the history. */
  secrets?: string[];
  /** An MCP tool: its server and name, and the replay class the run recorded for it. */
  mcp?: McpCallTarget & { replay: ReplayClass };
}

/** A tool call handed to the runners of a runner environment (`executeToolOnRunner`). */
export interface RunnerToolInput extends ExecuteToolInput {
  /** The environment's name (RunSettings.environment). */
  environment: string;
  /** How long the call waits for a runner to take it before it gets an error result. */
  waitMs: number;
}

/** Names a run's environment (`describeEnvironment`). */
export interface EnvironmentKindInput {
  tenantId: string;
  environment: string;
}

/**
 * Where a runner environment's calls go: `runner` (its queue), `launched` (the session's queue,
 * with a runner launched for it); `missing` and `unlaunchable` calls get an error result at once.
 */
export type RunnerEnvironmentKind = "runner" | "launched" | "missing" | "unlaunchable";

/** A call of a runner environment watched while it waits (`watchRunnerCall`). */
export interface WatchRunnerCallInput extends SessionRef {
  environment: string;
  kind: "runner" | "launched";
  /** The call's activity in the run's workflow (its state in Temporal says whether a runner took it). */
  activityId: string;
  /** A tool call's id and name (its stream says it waits); absent for a listing. */
  toolCall?: { id: string; name: string };
}

/** A call no runner took (`storeUnclaimedRunnerResult`): why, as its error result says. */
export interface UnclaimedRunnerCallInput extends RunnerToolInput {
  why: UnclaimedWhy;
}

export interface ExecuteToolResult {
  isError: boolean;
  /** "executed" ran now; "adopted" found its result stored; "unknown_outcome" refused to re-run. */
  outcome: "executed" | "adopted" | "unknown_outcome";
  preview: string;
  /** Live events the attempt had not sent when it ended; the run publishes them (see `LiveEventSink.settle`). */
  live?: LiveEvent[];
  /** After an MCP call: the run's servers that announced a changed tool list (listed again before the next turn). */
  mcpToolsChanged?: string[];
}

/** A `task` call's end: what `storeTaskResult` writes at the call's slot in the parent session. */
export interface StoreTaskResultInput extends SessionRef {
  slot: EntrySlot;
  toolCallId: string;
  toolName: string;
  agent: string;
  /** The child's session: its final answer is read from there. */
  child: SessionRef;
  status: string;
  reason: string;
  usage: Usage;
  /** The child completed because a limit or a hook stopped it: an error result. */
  cutShort: boolean;
  /** False when the child never ran (no session to read an answer from). */
  readAnswer: boolean;
  /** What became of the child's edits in the parent's workspace (absent: it worked in a fork). */
  merge?: MergeSubAgentWorkspaceResult;
}

/** A `task` call's end: the child's edits carried into the parent's workspace (`mergeSubAgentWorkspace`). */
export interface MergeSubAgentWorkspaceInput extends SessionRef {
  /** The parent's entry whose snapshot the child's workspace was forked from. */
  forkedAt: string;
  child: SessionRef;
  /** The call's result slot: the merged workspace is snapshotted there. */
  slot: EntrySlot;
}

/**
 * What became of the child's edits; `paths` names at most 20 of `count`. `separate`: the run's
 * tools run in a runner environment, where a child's edits stay in its own workspace (no merge).
 */
export type MergeSubAgentWorkspaceResult =
  | { outcome: "unchanged" }
  | { outcome: "applied"; count: number; paths: string[]; unrecorded?: string }
  | { outcome: "conflict"; count: number; paths: string[] }
  | { outcome: "unavailable"; reason: string }
  | { outcome: "separate"; environment: string };

export interface CompactInput extends SessionRef {
  model: string;
  reserveTokens: number;
  keepRecentTokens: number;
  /** Leaf whose context is compacted; the compaction entry becomes its child. */
  slot: EntrySlot;
  instructions?: string;
}

export interface CompactResult {
  compacted: boolean;
  reason: string;
  tokensBefore: number;
}

export interface BranchInput extends SessionRef {
  model: string;
  /** The leaf being left (summarized when `summarize`). */
  oldLeafId: string | null;
  /** The marker or branch summary entry; its parent is the entry navigated to. */
  slot: EntrySlot & { parentId: string };
  summarize: boolean;
  instructions?: string;
}

export interface BranchResult {
  entryId: string;
  summarized: boolean;
}

export interface PostChatReplyInput extends SessionRef {
  target: ChatReplyTarget;
  /** Id of the run execution: a reply is posted at most once per run. */
  runId: string;
  status: "completed" | "aborted" | "failed";
  reason: string;
}

export interface PostPauseNoticeInput extends SessionRef {
  target: ChatReplyTarget;
  /** Id of the run execution: with `pause.since`, each pause is announced at most once. */
  runId: string;
  pause: RunPause;
}

export interface ListMcpToolsInput extends SessionRef {
  servers: McpServerSettings[];
  /** The run's network policy: a stdio server gets "full" only where bash would, else none. */
  network?: NetworkPolicy;
}

/** A run's MCP servers listed on a runner of its environment (`listMcpToolsOnRunner`). */
export interface RunnerMcpListingInput extends ListMcpToolsInput {
  environment: string;
  /** How long the listing waits for a runner to take it before every server is reported unavailable. */
  waitMs: number;
}

/** A ready server's listing as an `llmTurn` input names it: stored once, read by digest. */
/** The MCP part of an `executeTool` input: the server (its settings) and the tool's own name. */
export interface McpCallTarget {
  server: McpServerSettings;
  tool: string;
}

/**
 * The activities of a runner environment's task queue: scheduled by the workflow, taken by the
 * API for the environment's runners and completed by task token (environments/calls.ts); no
 * worker runs them.
 */
export interface RunnerQueueActivities {
  executeToolOnRunner(input: RunnerToolInput): Promise<ExecuteToolResult>;
  listMcpToolsOnRunner(input: RunnerMcpListingInput): Promise<McpToolList>;
}

export interface KeelActivities extends ScheduledRunActivities, WebhookActivities, EvalActivities {
  openSession(input: OpenSessionInput): Promise<OpenSessionResult>;
  appendEntries(input: AppendEntriesInput): Promise<AppendEntriesResult>;
  claimWorkspace(input: ClaimWorkspaceInput): Promise<ClaimWorkspaceResult>;
  snapshotWorkspace(input: SnapshotWorkspaceInput): Promise<SnapshotWorkspaceResult>;
  restoreWorkspace(input: RestoreWorkspaceInput): Promise<RestoreWorkspaceResult>;
  llmTurn(input: LlmTurnInput): Promise<LlmTurnResult>;
  executeTool(input: ExecuteToolInput): Promise<ExecuteToolResult>;
  describeEnvironment(input: EnvironmentKindInput): Promise<RunnerEnvironmentKind>;
  watchRunnerCall(input: WatchRunnerCallInput): Promise<void>;
  storeUnclaimedRunnerResult(input: UnclaimedRunnerCallInput): Promise<ExecuteToolResult>;
  storeTaskResult(input: StoreTaskResultInput): Promise<ExecuteToolResult>;
  mergeSubAgentWorkspace(input: MergeSubAgentWorkspaceInput): Promise<MergeSubAgentWorkspaceResult>;
  compact(input: CompactInput): Promise<CompactResult>;
  branch(input: BranchInput): Promise<BranchResult>;
  postChatReply(input: PostChatReplyInput): Promise<{ posted: boolean }>;
  postPauseNotice(input: PostPauseNoticeInput): Promise<{ posted: boolean }>;
  listMcpTools(input: ListMcpToolsInput): Promise<McpToolList>;
  /** The tenant budget the tenant has used up, asked afresh (a paused run asking whether it may go on); null: none. */
  checkTenantBudget(input: { tenantId: string }): Promise<TenantBudgetHold | null>;
}

/** The activities of a schedule's firing (activities/scheduled-runs.ts). */
export interface StartScheduledRunInput extends SessionRef {
  text: string;
  settings: RunSettings;
  /** The delivery id: one per firing, so a retried start never delivers twice. */
  deliveryId: string;
  /** The schedule firing (for its `schedule.fired` webhook event; absent in older histories). */
  scheduleId?: string;
}

export interface StartScheduledRunResult {
  runId: string;
  /** How the session took the prompt (`started`, or `queued` behind a run already live, …). */
  delivery: string;
}

interface AwaitScheduledRunInput extends SessionRef {
  runId: string;
}

interface ScheduledRunEnd {
  status: string;
  reason: string;
}

interface AbortScheduledRunInput extends SessionRef {
  reason: string;
}

export interface ScheduledRunActivities {
  startScheduledRun(input: StartScheduledRunInput): Promise<StartScheduledRunResult>;
  awaitScheduledRun(input: AwaitScheduledRunInput): Promise<ScheduledRunEnd>;
  abortScheduledRun(input: AbortScheduledRunInput): Promise<{ aborted: boolean }>;
}

/** The activities of an eval's trials (activities/eval-trials.ts); start-to-end waits use `awaitScheduledRun`. */
export interface EvalTrialInput {
  tenantId: string;
  evalId: string;
  index: number;
}

export type StartEvalTrialResult =
  | {
      type: "started";
      sessionId: string;
      runId: string;
      /** Entries the trial's session inherited from the case's origin (not the trial's own). */
      inherited: number;
      startedAtMs: number;
    }
  /** The tenant's quotas hold the start back for now: the eval waits and tries again. */
  | { type: "held"; message: string; retryAfterSeconds: number }
  /** The trial cannot start (its origin entry is gone, the message was refused): judged as failed. */
  | { type: "refused"; sessionId: string; message: string };

export interface JudgeEvalTrialInput extends EvalTrialInput {
  sessionId: string;
  status: string;
  reason?: string;
  inherited: number;
  startedAtMs: number;
}

export interface EvalActivities {
  startEvalTrial(input: EvalTrialInput): Promise<StartEvalTrialResult>;
  /** Runs the case's checks, stores the trial's result once, and returns what the eval counts. */
  judgeEvalTrial(input: JudgeEvalTrialInput): Promise<{ passed: boolean; costUsd: number }>;
}
