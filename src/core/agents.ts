/**
 * Sub-agents: the definitions a run may delegate to through the `task` tool, the tool's spec, and
 * the pure rules a child run is built by (its session id, its settings: never more tools than its
 * parent's). Pure: no I/O, safe in the workflow bundle.
 */
import type { ToolSpec, Usage } from "./messages";

/** The tool the model calls to delegate: `{agent, prompt}`. */
export const TASK_TOOL_NAME = "task";

/** Longest `task` arguments (JSON) the workflow reads; a longer call gets an error result. */
export const MAX_TASK_ARGUMENTS_CHARS = 16_000;

/** An agent a run may delegate to. */
export interface AgentDefinition {
  /** What the model names in `task` (letters, digits, `-`, `_`). */
  name: string;
  /** What the model reads to choose the agent. */
  description: string;
  systemPrompt?: string;
  /** Model id; the parent's model when absent. */
  model?: string;
  /**
   * Tools the child may call; only those its parent has too are kept. The parent's (but `task`)
   * when absent. `task` lets the child delegate in turn, to the same agents, up to MAX_SUB_AGENT_DEPTH.
   */
  tools?: string[];
  /** Turns the child may take (default 20). */
  maxTurns?: number;
  /**
   * `parent` (default): the child works on a copy of the parent's workspace and its edits are
   * carried into the parent's when the call ends; `fork`: its edits stay in its own session.
   */
  workspace?: "parent" | "fork";
}

export const DEFAULT_AGENT_MAX_TURNS = 20;

/** The built-in read-only agent: looks things up in the workspace and reports. */
export const EXPLORE_AGENT: AgentDefinition = {
  name: "explore",
  description:
    "Read-only explorer: searches and reads files in the workspace (read, grep, find, ls) and reports what it found. Use it for questions about the code that need several lookups.",
  systemPrompt:
    "You explore a workspace to answer one question. You can only read: use read, grep, find and ls. Answer concisely with what you found, naming files and lines.",
  tools: ["read", "grep", "find", "ls"],
  maxTurns: DEFAULT_AGENT_MAX_TURNS,
};

const BUILTIN_AGENTS: readonly AgentDefinition[] = [EXPLORE_AGENT];

/** The agents a run offers: its own definitions, then the built-ins it does not redefine. */
export function availableAgents(defined: readonly AgentDefinition[] = []): AgentDefinition[] {
  const names = new Set(defined.map((agent) => agent.name));
  return [...defined, ...BUILTIN_AGENTS.filter((agent) => !names.has(agent.name))];
}

/** The `task` tool's spec, listing the agents the model may name. */
export function taskToolSpec(agents: readonly Pick<AgentDefinition, "name" | "description">[]): ToolSpec {
  const list = agents.map((agent) => `- ${agent.name}: ${agent.description}`).join("\n");
  return {
    name: TASK_TOOL_NAME,
    description: `Delegate a self-contained task to a sub-agent with its own context; it answers with its final report. Several task calls in one answer run in parallel. Agents:\n${list}`,
    parameters: {
      type: "object",
      properties: {
        agent: { type: "string", enum: agents.map((agent) => agent.name), description: "The agent's name." },
        prompt: { type: "string", description: "The task, with everything the agent needs to know." },
      },
      required: ["agent", "prompt"],
      additionalProperties: false,
    },
  };
}

export type TaskArguments =
  | { ok: true; agent: AgentDefinition; prompt: string }
  | { ok: false; error: string };

/**
 * Reads a `task` call's JSON arguments against the run's agents. Never throws: what the model got
 * wrong is an error text it can read.
 */
export function parseTaskArguments(json: string, agents: readonly AgentDefinition[]): TaskArguments {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return {
      ok: false,
      error: `task arguments are not valid JSON or longer than ${MAX_TASK_ARGUMENTS_CHARS} characters`,
    };
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    return { ok: false, error: "task arguments must be an object {agent, prompt}" };
  const { agent, prompt } = parsed as Record<string, unknown>;
  const names = agents.map((candidate) => candidate.name).join(", ");
  if (typeof agent !== "string") return { ok: false, error: `task needs "agent": one of ${names}` };
  if (typeof prompt !== "string" || prompt.trim() === "")
    return { ok: false, error: `task needs a non-empty "prompt"` };
  const definition = agents.find((candidate) => candidate.name === agent);
  if (!definition) return { ok: false, error: `Unknown agent "${agent}". Available agents: ${names}.` };
  return { ok: true, agent: definition, prompt };
}

/**
 * How deep sub-agents nest: a run its user started is at depth 0, its children at 1; a run at
 * this depth is not offered `task`, so a tree of delegations stays bounded.
 */
export const MAX_SUB_AGENT_DEPTH = 2;

/**
 * The tools of a child at `depth`: the definition's, kept only where the parent has them too (a
 * child never gets more than its parent). `task` only when the definition names it and the child
 * is less than MAX_SUB_AGENT_DEPTH deep; a definition without tools gets the parent's but `task`.
 */
export function childTools(parentTools: readonly string[], agent: AgentDefinition, depth = 1): string[] {
  const wanted = agent.tools ?? parentTools.filter((name) => name !== TASK_TOOL_NAME);
  return wanted.filter(
    (name) => parentTools.includes(name) && (name !== TASK_TOOL_NAME || depth < MAX_SUB_AGENT_DEPTH),
  );
}

/**
 * The child's session id, derived from the parent session and the tool call id: a retried or
 * replayed start names the same session (and workflow id), so the child never starts twice. Both
 * are hashed (FNV-1a, 2×32 bits) since providers' ids may hold any character; the parent's id
 * leads (cut to fit the store's 128 characters) so people see whose child it is.
 */
export function childSessionId(parentSessionId: string, toolCallId: string): string {
  const key = `${parentSessionId}\n${toolCallId}`;
  return `${parentSessionId.slice(0, 106)}-task-${fnv1a(key, 0x811c9dc5)}${fnv1a(key, 0x050c5d1f)}`;
}

function fnv1a(text: string, seed: number): string {
  let hash = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/** The `task` result the parent's model reads: the child's answer, its usage, its session. */
export function taskResultText(outcome: {
  agent: string;
  sessionId: string;
  status: string;
  reason: string;
  answer: string;
  usage: Usage;
}): string {
  const { agent, sessionId, status, reason, answer, usage } = outcome;
  const head =
    status === "completed"
      ? `Agent ${agent} finished (session ${sessionId}).`
      : `Agent ${agent} ${status}: ${reason} (session ${sessionId}).`;
  const tally = `Usage: ${usage.input} input, ${usage.output} output tokens, $${usage.cost.total.toFixed(4)}.`;
  return [head, answer || "(no answer)", tally].join("\n\n");
}
