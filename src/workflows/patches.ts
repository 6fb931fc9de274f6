/**
 * Workflow versioning, in one place: every patch of the workflows' code, and the one way a branch
 * is taken. A change that would not replay the histories of runs already started goes behind a
 * patch here (Temporal's patch API, as in temporalio/samples-typescript `patching-api`):
 * 1. `addedIn`: new runs take the new branch (`patched()` records a marker); histories without
 *    the marker take the old one.
 * 2. `deprecatedIn`: once no run inside the support window took the old branch (the patch was
 *    added before the window's oldest release), the old branch is deleted and the patch
 *    deprecated (`deprecatePatch()`: histories with or without the marker replay).
 * 3. Once the release that deprecated it is outside the window too, the patch is deleted.
 * The window and the checks that enforce it: docs/architecture.md, "Versioning";
 * test/unit/workflows/versioning.test.ts fails when a patch or a committed history is due.
 *
 * Runs of `RunInput.runVersion` 1 or later take the patches marked `inRunVersion` without a marker
 * (a marker is a command, a history event and a billed Action in every run). The run version is
 * frozen: no new patch is folded into it, and it ends with the histories that recorded it.
 */
import { deprecatePatch, patched } from "@temporalio/workflow";

/** The release label of code not yet released (CHANGELOG.md's top section). */
export const UNRELEASED = "Unreleased";

export interface PatchRecord {
  /** The id recorded in histories (never changed once shipped). */
  id: string;
  /** The release whose code added the branch (`UNRELEASED` until it ships). */
  addedIn: string;
  /** The release whose code deleted the old branch and deprecated the patch. */
  deprecatedIn?: string;
  /** Runs of this run version or later take the branch without a marker. */
  inRunVersion?: 1;
}

export const PATCHES = {
  /** A closing run waits (at most 3 s) for its stream's subscribers to fetch the last items. */
  runStreamDrain: { id: "run-stream-drain", addedIn: UNRELEASED, inRunVersion: 1 },
  /** Parallel tool calls share one workspace claim per run. */
  claimWorkspaceOnce: { id: "claim-workspace-once", addedIn: UNRELEASED, inRunVersion: 1 },
  /** A batch that ran a tool that may change files is followed by a workspace snapshot. */
  workspaceSnapshots: { id: "workspace-snapshots", addedIn: UNRELEASED, inRunVersion: 1 },
  /** A call to a tool the run was not given (not in `tools`, not a listed MCP tool) is refused. */
  offeredToolsOnly: { id: "offered-tools-only", addedIn: UNRELEASED },
  /** A `task` call runs a sub-agent as a child workflow (run/task-calls.ts). */
  subAgents: { id: "sub-agents", addedIn: UNRELEASED },
  /** MCP servers that announced a changed tool list during a batch are listed again after it. */
  mcpToolsRelisted: { id: "mcp-tools-relisted", addedIn: UNRELEASED },
  /** Hooks see MCP tools that are not `safe` as tools that may change things (`read-only` blocks them). */
  hooksSeeMcpTools: { id: "hooks-see-mcp-tools", addedIn: UNRELEASED },
  /**
   * A `task` call's result is written by an activity that reads the child's full final answer
   * from its session (cut at the output limits), not from the child's 500-character preview.
   */
  taskResultFromSession: { id: "task-result-from-session", addedIn: UNRELEASED },
  /** Branching restores the workspace as it was at the entry. */
  branchRestoresWorkspace: { id: "branch-restores-workspace", addedIn: UNRELEASED },
  /** A run that reaches its budget pauses at the next turn boundary instead of ending (run/pause.ts). */
  budgetPause: { id: "budget-pause", addedIn: UNRELEASED },
  /** A parent's turn limit counts its sub-agents' turns; a child gets at most the turns left. */
  subAgentTurns: { id: "sub-agent-turns", addedIn: UNRELEASED },
  /** A run whose tenant used up a token or cost budget pauses until the tenant is under it again. */
  tenantBudgetPause: { id: "tenant-budget-pause", addedIn: UNRELEASED },
  /** A run from a chat thread announces its pause there (run/pause.ts, activities/chat-reply.ts). */
  pauseChatNotice: { id: "pause-chat-notice", addedIn: UNRELEASED },
  /** A sub-agent's edits are carried into its parent's workspace when its `task` call ends. */
  subAgentWorkspaceMerge: { id: "sub-agent-workspace-merge", addedIn: UNRELEASED },
  /** An abort cancels the listing of the run's MCP servers (on a runner it may wait long). */
  mcpListingCancellable: { id: "mcp-listing-cancellable", addedIn: UNRELEASED },
  /** A listing of MCP tools whose worker is gone follows the workspace to another worker. */
  mcpListingMovesWorkspace: { id: "mcp-listing-moves-workspace", addedIn: UNRELEASED },
  /** A branch whose workspace holder is gone restores the entry's files on the next worker. */
  branchRestoreMovesWorkspace: { id: "branch-restore-moves-workspace", addedIn: UNRELEASED },
  /** The snapshot a batch's sub-agents start from follows the workspace when its holder is gone. */
  subAgentForkPointMoves: { id: "sub-agent-fork-point-moves", addedIn: UNRELEASED },
  /** Calls of a batch that met a dead workspace worker keep a claim another call made since. */
  workspaceMovesOnce: { id: "workspace-moves-once", addedIn: UNRELEASED },
  /**
   * A `task` call's sub-agent gets a share of what its parent has left of its cost, token and turn
   * budgets, held by the parent while it runs (run/budget.ts `childShare`); a share of no turns is
   * an error result, no child.
   */
  subAgentShares: { id: "sub-agent-shares", addedIn: UNRELEASED },
  /**
   * A run with fallback models takes a turn whose call failed in a way retrying will not fix soon
   * to its next model (run/model-calls.ts `callModelFailingOver`).
   */
  providerFailover: { id: "provider-failover", addedIn: UNRELEASED },
  /** A run whose tenant has webhook endpoints publishes the events they take (run/webhooks.ts). */
  webhookEvents: { id: "webhook-events", addedIn: UNRELEASED },
} as const satisfies Record<string, PatchRecord>;

/**
 * Whether this execution takes the branch `patch` added. `runVersion` is the run's
 * (`RunInput.runVersion`, 0 when absent; maintenance workflows have none).
 */
export function takesPatch(patch: PatchRecord, runVersion = 0): boolean {
  if (patch.inRunVersion !== undefined && runVersion >= patch.inRunVersion) return true;
  if (patch.deprecatedIn !== undefined) {
    deprecatePatch(patch.id);
    return true;
  }
  return patched(patch.id);
}
