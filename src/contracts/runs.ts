// Over 400 lines: the one central types file of the workflows (their whole contract with callers), kept whole so it reads as one.
/**
 * The run workflow's contract with its callers: input, settings, deliveries, state and result.
 * Plain data only (it travels through Temporal payloads and is carried across continue-as-new).
 */
import type { WorkflowStreamState } from "@temporalio/workflow-streams/workflow";
import type { AgentDefinition } from "../core/agents";
import { type CompactionSettings, DEFAULT_COMPACTION_SETTINGS } from "../core/compaction-settings";
import { AGENT_END_STATUSES } from "../core/events";
import type { Usage } from "../core/messages";
import { DEFAULT_QUEUE_CAPACITY, LIVE_RUN_DELIVERY_MODES, type QueueMode } from "../core/queues";
import type { ChatReplyTarget, SessionCursor } from "../core/run-types";
import type { SessionRef } from "../core/session-ref";
import type { ToolCallState } from "../core/tool-registry";
import type { McpServerSettings, McpToolList } from "../mcp/types";
import type { ThinkingLevel } from "../providers/types";
import type { NetworkPolicy } from "../tools/sandbox";
import type { WorkspaceSource } from "../tools/workspace";
import type { RunPause, TenantBudgetHold } from "./pause";

/** How a message reaches a session: `auto` starts a run or steers the live one; see docs/architecture.md. */
export const DELIVERY_MODES = ["auto", ...LIVE_RUN_DELIVERY_MODES] as const;
export type DeliveryMode = (typeof DELIVERY_MODES)[number];
/** What happened to a delivered message. */
export const DELIVERY_OUTCOMES = ["started", "steered", "queued", "interrupted"] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];
export type { ThinkingLevel };

export const POLICY_ACTIONS = ["allow", "deny", "ask"] as const;
export type PolicyAction = (typeof POLICY_ACTIONS)[number];

/** First matching rule wins; `argumentsPattern` is a regular expression over the JSON arguments. */
interface ToolPolicyRule {
  tool: string;
  argumentsPattern?: string;
  action: PolicyAction;
}

export interface ToolPolicy {
  rules: ToolPolicyRule[];
  default: PolicyAction;
  /** How long an `ask` waits for a decision before it counts as a denial. */
  approvalTimeoutMs: number;
}

export interface RunLimits {
  maxTurns: number;
  maxToolCalls: number;
  /** Stop once the run's cost reaches this many US dollars (0 = no budget). */
  maxCostUsd: number;
  /** Pause once the run has used this many tokens, input and output (0 or absent = no budget). */
  maxTokens?: number;
  /**
   * How long a run paused at its budget waits for a raise or a resume before it ends (seconds;
   * absent = `DEFAULT_PAUSE_TIMEOUT_SECONDS`).
   */
  pauseTimeoutSeconds?: number;
  /**
   * Turns per workflow execution: the run continues as new (same run, fresh history) after this
   * many, or earlier when Temporal suggests it.
   */
  turnsPerExecution: number;
}

/** Compaction of a run: on or off, and the thresholds of core/compaction-settings. */
interface RunCompactionSettings extends CompactionSettings {
  enabled: boolean;
}

export interface RunSettings {
  /** Model id from the catalog (src/providers/models.json or KEEL_MODELS_FILE). */
  model: string;
  /**
   * Models that take a turn, in order, when the call to the ones before fails in a way retrying
   * will not fix soon (docs/providers.md, "Failover"). The API's `model: [a, b, c]` is
   * `model: a, fallbackModels: [b, c]`.
   */
  fallbackModels?: string[];
  systemPrompt?: string;
  thinkingLevel: ThinkingLevel;
  /** Names of the built-in tools the model may call (`task` offers the sub-agents: core/agents.ts). */
  tools: string[];
  toolExecution: "sequential" | "parallel";
  policy: ToolPolicy;
  limits: RunLimits;
  steeringMode: QueueMode;
  followUpMode: QueueMode;
  /** Bound of each queue; a message beyond it is refused, never dropped. */
  queueLimit: number;
  compaction: RunCompactionSettings;
  /** Empty assistant answers (no text, no tool call) nudged before the run fails. */
  maxEmptyResponses: number;
  /** What a new session's workspace starts from (default: empty). */
  workspace?: WorkspaceSource;
  /**
   * Network access of the processes tools start (default "none"); passed to executeTool as
   * `network`. An allowlist goes through the call's egress proxy (tools/egress-proxy.ts) and is
   * refused where none can run (KEEL_SANDBOX=off, no socat).
   */
  network?: NetworkPolicy;
  /**
   * Names of the tenant's secrets the run's tool processes may use (docs/tools.md, "Secrets"):
   * names only, never values. Each bash call resolves them fresh on its worker or runner; inside
   * the sandbox each is a placeholder the egress proxy swaps for the value toward its bound hosts.
   * Never with network "full" (the API refuses it, the sandbox too). A sub-agent inherits them, as
   * it inherits `network`.
   */
  secrets?: string[];
  /**
   * Where the run's tools run: absent or "worker" (the worker holding the session's workspace), or
   * the name of one of the tenant's runner environments (docs/architecture.md, "Environments").
   */
  environment?: string;
  timeouts: RunTimeouts;
  /** Hook sets (src/workflows/hooks.ts) applied to this run, in order. */
  hooks: string[];
  /** Where the run's final answer is posted when it ends (runs started from a chat thread). */
  chatReply?: ChatReplyTarget;
  /** MCP tool servers whose tools the model may call as `<server>__<tool>` (docs/tools.md, "MCP servers"). */
  mcpServers?: McpServerSettings[];
  /** Agents the `task` tool may delegate to, besides the built-in ones (core/agents.ts). */
  agents?: AgentDefinition[];
}

export interface RunTimeouts {
  /** An activity silent this long is presumed dead (its worker crashed) and retried. */
  heartbeatMs: number;
  /** A tool task not picked up by the workspace's worker in this time moves the workspace. */
  toolScheduleToStartMs: number;
  /** A call for a runner environment that no runner takes in this time gets an error result (default 10 minutes). */
  environmentWaitMs?: number;
}

export const DEFAULT_RUN_SETTINGS: RunSettings = {
  model: "local-chat",
  thinkingLevel: "off",
  tools: ["read", "write", "edit", "bash", "grep", "find", "ls"],
  toolExecution: "parallel",
  policy: { rules: [], default: "allow", approvalTimeoutMs: 24 * 60 * 60 * 1000 },
  limits: { maxTurns: 50, maxToolCalls: 200, maxCostUsd: 0, turnsPerExecution: 100 },
  steeringMode: "one-at-a-time",
  followUpMode: "all",
  queueLimit: DEFAULT_QUEUE_CAPACITY,
  compaction: { enabled: true, ...DEFAULT_COMPACTION_SETTINGS },
  maxEmptyResponses: 2,
  timeouts: { heartbeatMs: 30_000, toolScheduleToStartMs: 30_000 },
  hooks: [],
};

export type { SessionCursor } from "../core/run-types";
export type { SessionRef } from "../core/session-ref";
export {
  type BudgetRequest,
  DEFAULT_PAUSE_TIMEOUT_SECONDS,
  type PauseReason,
  type RunPause,
} from "./pause";

export interface QueuedMessage {
  text: string;
  /** Epoch ms at which the run accepted it. */
  acceptedAt: number;
  /** The run's own message (the nudge after an empty answer): never handed back as unread. */
  fromRun?: true;
}

/** What a run carries into its continuation (continue-as-new): small by construction. */
export interface CarriedState {
  cursor: SessionCursor;
  turn: number;
  /** Turns its sub-agents' runs took (they count against its turn limit). */
  subAgentTurns?: number;
  /** The model is owed a call: the previous execution ended its turn with tool results. */
  needsModel: boolean;
  /** Model and thinking level of the next call (hooks may have changed them). */
  next: { model: string; thinkingLevel: ThinkingLevel };
  /** Context size the model last reported, and its window (the compaction check needs both). */
  contextTokens: number;
  contextWindow: number;
  toolCallCount: number;
  usage: Usage;
  steering: QueuedMessage[];
  followUp: QueuedMessage[];
  /** A message the previous execution accepted but had not yet written. */
  pending: QueuedMessage[];
  nextEventSeq: number;
  emptyResponses: number;
  /** Answers to the latest deliveries by update id: a retried delivery is answered, not applied twice. */
  recentDeliveries?: RecentDelivery[];
  /** The run stream's last few items and its offsets (absent from runs that had no stream). */
  stream?: WorkflowStreamState;
  /** The MCP tool list recorded at the run's start: every execution offers the same tools. */
  mcpTools?: McpToolList;
  /** The tenant budget the run's last model call found used up (it pauses before its next turn). */
  tenantBudget?: TenantBudgetHold;
  /** The model that answered the run's last call, when a failover made it other than `next.model`. */
  activeModel?: string;
  /** The webhook event types the run emits (learned when its session opened). */
  webhookEvents?: string[];
}

/**
 * A delivery the run answered, by its id: the `deliver` update's id or the `deliverMessage`
 * signal's `deliveryId` (ids the client chose, e.g. from an Idempotency-Key). A delivery sent by
 * signal is answered through the `delivery` query, so its refusal is kept too.
 */
export type RecentDelivery = {
  /** The delivery's id (named for the update that first carried it; signals use the same ids). */
  updateId: string;
} & DeliveryAnswer;

/** Why a run refused a delivery: `type` is one of `DeliveryRefusal`. */
interface DeliveryRefusalAnswer {
  type: string;
  message: string;
}

/** The `delivery` query's answer: how the run took the delivery with that id, or why it did not. */
export type DeliveryAnswer =
  | { result: DeliverResult; refusal?: undefined }
  | { refusal: DeliveryRefusalAnswer; result?: undefined };

export interface RunInput extends SessionRef {
  settings: RunSettings;
  carried?: CarriedState;
  /** Set when the previous run of the session ended with messages that arrived after its end. */
  handedOver?: HandOver;
  /**
   * Set on a sub-agent's run: the parent session, the `task` call it answers, and the parent's
   * entry (the assistant message with the call) whose workspace snapshot the child's workspace
   * starts from (a fork).
   */
  parent?: {
    sessionId: string;
    toolCallId: string;
    forkedAt: string;
    /** How deep the run is: 1 (absent) for a child of a run its user started, 2 for its child. */
    depth?: number;
  };
  /**
   * What its starter knows the run's code to be, at least (`RUN_VERSION`); absent in runs started
   * before it existed. See `RUN_VERSION`.
   */
  runVersion?: number;
}

/**
 * The run version starters set (`RunInput.runVersion`). A run of version 1 or later:
 * - was started with its search attributes set (tenant, session, model, status `starting`; from
 *   version 2 on status `running`, so its status is upserted once, when it ends), and upserts only
 *   those that change;
 * - takes the code branches added by the patches older than version 1 (`run-stream-drain`,
 *   `claim-workspace-once`, `workspace-snapshots`) without calling `patched()`, which records a
 *   marker and upserts `TemporalChangeVersion`: two commands, events and billed Actions a run.
 * Runs without it (started before it existed, or continued from one) do both as their histories
 * recorded. A starter may set it only once every worker runs code that knows it: deploy workers
 * before the API (docs/deploy.md). Frozen at 2: a new change is a patch (`patches.ts`), and the
 * version's branches end with the histories that recorded them (docs/architecture.md, "Versioning").
 */
export const RUN_VERSION = 2;

/**
 * The status a run of version `runVersion` is started with (and listed under until it ends): a run
 * of version 2 or later is `running` from its start, one upsert fewer than `starting` then
 * `running`. Its own state still says `starting` until its first turn.
 */
export function startedStatus(runVersion: number): RunStatus {
  return runVersion >= 2 ? "running" : "starting";
}

/**
 * Messages a run took by signal after its end (its sender may have been answered `pending` and is
 * not told of a refusal), with the answers it gave: they start the next run, which continues the
 * session's workflow (continue-as-new) with the ended run's settings, and answers a retried
 * delivery id as the ended run did.
 */
interface HandOver {
  messages: QueuedMessage[];
  deliveries: RecentDelivery[];
}

export interface DeliverRequest {
  text: string;
  mode: DeliveryMode;
}

/**
 * The `deliverMessage` signal's argument: a message for a live run, with the id its answer is
 * read back by (the `delivery` query). A repeated id is answered, not applied twice.
 */
export interface DeliverySignal extends DeliverRequest {
  deliveryId: string;
}

export interface DeliverResult {
  delivery: DeliveryOutcome;
  /** Messages waiting in the queue the message went to, itself included. */
  queueLength: number;
  /**
   * The run had already decided to end: it hands the message to the session's next execution
   * (continue-as-new), the run that reads it.
   */
  handedOver?: true;
}

/** Longest abort reason a caller may give (the API's schema and the run's validator agree). */
export const MAX_ABORT_REASON_CHARS = 1_000;
/**
 * An abort reason must contain a character other than ASCII whitespace (a blank reason says
 * nothing). Written out rather than `\S` so JavaScript and the OpenAPI document's readers (e.g.
 * Python's `re`) agree on every string.
 */
export const ABORT_REASON_PATTERN = "[^\t\n\v\f\r ]";

/** The reason an abort without one ends the run with. */
export const DEFAULT_ABORT_REASON = "aborted by user";

/** The `abortRun` update's argument: why the run is stopped (default "aborted by user"). */
export interface AbortRequest {
  reason?: string;
}

/**
 * The `abortState` query's answer: the run is stopping (with the first abort's reason and what it
 * will never read), ended without an abort, or has not seen an abort.
 */
export type AbortState = ({ kind: "aborting" } & AbortResult) | { kind: "ended" } | { kind: "running" };

/** The `abortRun` update's answer: the reason the run ends with, and what it will never read. */
export interface AbortResult {
  /** The reason of the first abort the run accepted (a later abort does not replace it). */
  reason: string;
  /**
   * Messages the run accepted (queued) and will end without reading, oldest first: the same list
   * the run's result and its `agent_end` event report.
   */
  unprocessed: QueuedMessage[];
}

/** How a run ended by itself (as its `agent_end` event says): the last three of `RUN_STATUSES`. */
export const RUN_END_STATUSES = AGENT_END_STATUSES;
export const RUN_STATUSES = [
  "starting",
  "running",
  "waiting_approval",
  "paused",
  ...RUN_END_STATUSES,
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
type RunEndStatus = (typeof RUN_END_STATUSES)[number];

interface PendingToolCall {
  toolCallId: string;
  name: string;
  state: ToolCallState;
  /** Shortened JSON of the arguments. */
  argumentsPreview: string;
  /** Where it runs: `worker`, a runner environment's name, `mcp:<server>` (`mcp:<server>@<env>` on a runner), or `sub-agent`. */
  ranOn?: string;
}

export interface RunState {
  status: RunStatus;
  turn: number;
  toolCallCount: number;
  leafId: string | null;
  nextSeq: number;
  usage: Usage;
  queues: { steering: number; followUp: number };
  pendingToolCalls: PendingToolCall[];
  lastAssistantText: string;
  endReason?: string;
  /** Why a failed run failed, when an activity failed for good: its failure type and message. */
  error?: RunError;
  lastEventSeq: number;
  /** Set while the run is paused (status `paused`): why, since when and until when it waits. */
  pause?: RunPause;
  /** The run's budgets now (0 = none); absent from runs older than budgets that pause. */
  budget?: { maxCostUsd: number; maxTokens: number };
  /**
   * The run this one continues (continue-as-new: a long run's next execution, or the run that
   * reads messages handed over at a run's end); absent for a run that was started.
   */
  previousRunId?: string;
}

export interface RunError {
  /** The failure type (e.g. `UnknownModel`, `RetryableLlmError`, a timeout). */
  type: string;
  message: string;
}

export interface RunResult {
  status: RunEndStatus;
  reason: string;
  turns: number;
  usage: Usage;
  leafId: string | null;
  nextSeq: number;
  /** Messages the run accepted (queued) but ended without reading: they were not delivered. */
  unprocessed?: QueuedMessage[];
  /** A sub-agent's run: the start of its last answer (what its parent's `task` call reports). */
  answer?: string;
  /** Turns its own sub-agents took (absent: none, or a run that did not count them). */
  subAgentTurns?: number;
  /** A sub-agent's run stopped by a limit or a hook before it finished its task. */
  cutShort?: boolean;
  /**
   * The latest deliveries the run took, by id, with their answers: a retry of one after the run
   * closed (its idempotency record lost) is answered from here instead of starting a new run.
   */
  deliveries?: RecentDelivery[];
}

export const APPROVAL_DECISIONS = ["approve", "reject"] as const;

export interface ApprovalDecision {
  toolCallId: string;
  decision: (typeof APPROVAL_DECISIONS)[number];
  /** Replacement arguments (an edit); validated by the tool before it runs. */
  arguments?: Record<string, unknown>;
  reason?: string;
}

/** Working directory recorded in a session's header: where its workspace appears to the model. */
export function sessionCwd(ref: SessionRef): string {
  return `/workspaces/${ref.tenantId}/${ref.sessionId}`;
}

/** Workflow id of the run of a session: at most one run is live per session. */
export function runWorkflowId(ref: SessionRef): string {
  return `keel-run/${ref.tenantId}/${ref.sessionId}`;
}
