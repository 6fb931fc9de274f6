/**
 * Run hooks: deterministic functions, compiled into the workflow bundle and chosen per run by
 * name (`RunSettings.hooks`). They see short summaries only (no I/O, no clock), so a replay makes
 * the same decisions. Add a hook set by adding an entry to `HOOK_SETS`.
 */
import type { ToolCallSummary } from "../contracts/activities";
import type { ThinkingLevel } from "../contracts/runs";

/** What a finished turn looked like. */
export interface TurnOutcome {
  turn: number;
  stopReason: string;
  /** Start of the assistant's text. */
  text: string;
  toolCalls: ToolCallSummary[];
  /** Tool calls of this turn whose result is an error. */
  failedToolCalls: number;
}

/** What a hook may change for the next model call. */
export interface NextTurnSettings {
  model: string;
  thinkingLevel: ThinkingLevel;
}

/** What the run knows of a tool call beyond its summary. */
export interface ToolCallFacts {
  /**
   * The call may change the workspace or the world: a built-in that writes (MUTATING_TOOLS), or
   * an MCP tool whose replay class is not `safe` (its server did not say `readOnlyHint`, nor did
   * the operator class it `safe`).
   */
  mayChange: boolean;
}

export interface RunHooks {
  /** After a turn's tool calls: a reason to end the run now (completed), or undefined. */
  shouldStopAfterTurn?(outcome: TurnOutcome): string | undefined;
  /** Before the next model call: settings to change from then on, or undefined. */
  prepareNextTurn?(outcome: TurnOutcome, current: NextTurnSettings): Partial<NextTurnSettings> | undefined;
  /** Before a tool call runs (after the policy allowed it): a reason to block it, or undefined. */
  beforeToolCall?(call: ToolCallSummary, facts: ToolCallFacts): string | undefined;
}

export const HOOK_SETS: Readonly<Record<string, RunHooks>> = {
  /** Answer or act once: the run ends after its first turn (tool results are recorded). */
  "single-turn": {
    shouldStopAfterTurn: (outcome) => `single-turn run ended after turn ${outcome.turn}`,
  },
  /** Looking only: tools that may change the workspace (or, for MCP tools, anything) are blocked (the model reads why). */
  "read-only": {
    beforeToolCall: (call, facts) =>
      facts.mayChange ? `${call.name} is blocked: this run is read-only` : undefined,
  },
  /** End the run as soon as a tool call fails, for a person to look at. */
  "stop-on-tool-error": {
    shouldStopAfterTurn: (outcome) =>
      outcome.failedToolCalls > 0
        ? `stopped after ${outcome.failedToolCalls} failed tool call(s)`
        : undefined,
  },
  /** Think harder on the turn after a tool call failed. */
  "think-after-errors": {
    prepareNextTurn: (outcome) => (outcome.failedToolCalls > 0 ? { thinkingLevel: "high" } : undefined),
  },
};

/** The hook sets named in settings, in order; unknown names are rejected where settings enter. */
export function hooksNamed(names: readonly string[]): RunHooks[] {
  return names.flatMap((name) => {
    const hooks = HOOK_SETS[name];
    return hooks ? [hooks] : [];
  });
}

/** First stop reason any hook gives. */
export function stopReasonAfterTurn(hooks: readonly RunHooks[], outcome: TurnOutcome): string | undefined {
  for (const hook of hooks) {
    const reason = hook.shouldStopAfterTurn?.(outcome);
    if (reason) return reason;
  }
  return undefined;
}

/** Settings for the next call: every hook's changes applied in order. */
export function nextTurnSettings(
  hooks: readonly RunHooks[],
  outcome: TurnOutcome,
  current: NextTurnSettings,
): NextTurnSettings {
  let settings = current;
  for (const hook of hooks) {
    const changes = hook.prepareNextTurn?.(outcome, settings);
    if (changes) settings = { ...settings, ...changes };
  }
  return settings;
}

/** First reason any hook gives to block `call`. */
export function blockReason(
  hooks: readonly RunHooks[],
  call: ToolCallSummary,
  facts: ToolCallFacts,
): string | undefined {
  for (const hook of hooks) {
    const reason = hook.beforeToolCall?.(call, facts);
    if (reason) return reason;
  }
  return undefined;
}
