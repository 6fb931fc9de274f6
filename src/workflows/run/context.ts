/**
 * `RunContext`: what every part of the workflow code passes around — the run's pure record
 * (`state.ts`) plus what only the workflow can hold (activity proxies, the cancel scope, the
 * stream, the model call under way).
 */
import type { CancellationScope } from "@temporalio/workflow";
import type { EntrySlot, EntryWrite, RunnerEnvironmentKind } from "../../contracts/activities";
import type { RunHooks } from "../hooks";
import type { llmActivities } from "./activity-options";
import type { RunRecord } from "./state";
import type { RunStream } from "./stream";

/** The run's state plus what only the workflow can hold: activity proxies and the cancel scope. */
export interface RunContext {
  run: RunRecord;
  hooks: RunHooks[];
  llm: ReturnType<typeof llmActivities>;
  /** The work an abort or interrupt cancels. */
  inFlight?: CancellationScope;
  /**
   * The model call under way: what a failure or an interruption must close (its user messages and
   * its slot). Opened and settled by `run/model-calls.ts`, closed by `closeModelCall`.
   */
  modelCall?: { slot: EntrySlot; writesFirst: EntryWrite[]; model?: string };
  /** Task queue of the worker holding the workspace, once claimed (claimed once per run). */
  workspaceQueue?: Promise<string>;
  /** This run's openSession created the session, and no workspace claim was made since. */
  unclaimedNewSession?: boolean;
  /** A tool that may change files ran since the last snapshot (refused or blocked calls did not). */
  ranMutatingTool?: boolean;
  /** The run's stream of events and deltas. */
  stream: RunStream;
  /** `RunInput.runVersion`, 0 when absent. */
  runVersion: number;
  /** A sub-agent's run (`RunInput.parent`): it calls only the tools it was given. */
  subAgent?: boolean;
  /** How deep in a tree of sub-agents the run is: 0 for a run its user started. */
  depth: number;
  /**
   * A sub-agent's workspace is a fork of its parent's at this parent entry: its claims restore
   * that snapshot (through the header's `parentSession`) until it records one of its own.
   */
  forkedAt?: string;
  /** The snapshot `task` calls of this batch fork their children's workspaces from. */
  taskFork?: { entryId: string; taken: Promise<void> };
  /** The kind of the run's runner environment, asked once (run/runner-calls.ts). */
  environmentKind?: Promise<RunnerEnvironmentKind>;
  /** Webhook events handed to their publisher, one after another; awaited before the run closes. */
  webhooksPublished?: Promise<void>;
  /** MCP servers whose calls in this batch reported a changed tool list (listed again after it). */
  mcpToolsChanged?: Set<string>;
}
