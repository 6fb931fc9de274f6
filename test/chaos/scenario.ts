/**
 * What the local LLM server plays for a chaos session: a few tool turns (write, bash, read, ls,
 * edit, grep, find; mostly parallel batches) and a final answer; a follow-up gets one read and an
 * answer. Every answer starts with the tag of the request it answers (`[call:<digest>]`), so the
 * stored session says which model call produced each assistant entry.
 */
import { createHash } from "node:crypto";
import type { LocalLlmServer } from "../../src/providers/local-server";
import type {
  NormalizedRequest,
  Scenario,
  ScriptedToolCall,
  Turn,
} from "../../src/providers/local-server/types";
import { BUDGETED_CALL, type SessionPlan } from "./plan";

/** Words that mark a follow-up message (the scenario answers it in one tool turn). */
export const FOLLOW_UP_WORD = "follow-up";
const TAG_PATTERN = /^\[call:([0-9a-f]{16})\]/;

/** The digest the local LLM server journals for `request` (sha256 of system, messages, tools). */
export function requestDigest(request: NormalizedRequest): string {
  const canonical = JSON.stringify([request.system, request.messages, request.tools]);
  return createHash("sha256").update(canonical).digest("hex").slice(0, 16);
}

/** The request digest an answer was tagged with, if it carries one. */
export function callTagOf(text: string): string | undefined {
  return TAG_PATTERN.exec(text)?.[1];
}

/** A `task` call: the built-in explore agent plays `scenario` as a follow-up (one read, then its report). */
function taskCall(scenario: string, which = ""): ScriptedToolCall {
  return {
    name: "task",
    arguments: {
      agent: "explore",
      prompt: `[scenario:${scenario}] A ${FOLLOW_UP_WORD} for a sub-agent${which}: read notes.md and report.`,
    },
  };
}

/**
 * The tool batch of step `step` (cycling): files first written, then read (by the session and by
 * a sub-agent, which plays `scenario` as a follow-up: one read, then its report; `parallelTasks`
 * sub-agents in parallel when set), edited and searched.
 */
function toolBatch(step: number, scenario: string, parallelTasks = 1): ScriptedToolCall[] {
  switch (step % 4) {
    case 0:
      return [
        { name: "write", arguments: { path: "notes.md", content: "# Notes\nline one\nline two\n" } },
        { name: "bash", arguments: { command: "echo start >> log.txt; sleep 1; echo ok" } },
      ];
    case 1:
      return [
        { name: "read", arguments: { path: "notes.md" } },
        { name: "bash", arguments: { command: "sleep 2; echo slept >> log.txt; echo ok" } },
        { name: "ls", arguments: { path: "." } },
        // An MCP call (server-everything on stdio, in the sandbox of the worker or runner holding the
        // session's workspace; read-only, so repeated after a kill).
        { name: "everything__echo", arguments: { message: "chaos" } },
        // A sub-agent: a child workflow on its own session, in a fork of this workspace (several in
        // parallel in a budgeted session, each on its share of the budgets).
        ...(parallelTasks === 1
          ? [taskCall(scenario)]
          : [...Array(parallelTasks).keys()].map((which) =>
              taskCall(scenario, ` (${which + 1} of ${parallelTasks})`),
            )),
      ];
    case 2:
      return [
        { name: "edit", arguments: { path: "notes.md", oldText: "line one", newText: "line one (edited)" } },
      ];
    default:
      return [
        { name: "grep", arguments: { pattern: "line", path: "." } },
        { name: "bash", arguments: { command: "wc -l log.txt notes.md" } },
        { name: "find", arguments: { pattern: "*.md" } },
      ];
  }
}

/**
 * The scenario `name` of one session: `toolTurns` tool turns per prompt, one after a follow-up.
 * With `parallelTasks` (a budgeted session), the second turn has that many `task` calls and every
 * answer, the sub-agents' too, reports the usage of BUDGETED_CALL exactly.
 */
export function chaosScenario(name: string, toolTurns: number, parallelTasks?: number): Scenario {
  const usage =
    parallelTasks === undefined
      ? {}
      : { usage: { input: BUDGETED_CALL.input, output: BUDGETED_CALL.output, cacheRead: 0, cacheWrite: 0 } };
  const reply = (request: NormalizedRequest): Turn => {
    const tag = `[call:${requestDigest(request)}]`;
    const lastUser = request.messages.findLastIndex((message) => message.role === "user");
    const userText = request.messages[lastUser]?.role === "user" ? request.messages[lastUser].text : "";
    const steps = request.messages
      .slice(lastUser + 1)
      .filter((message) => message.role === "assistant").length;
    const followUp = userText.includes(FOLLOW_UP_WORD);
    if (steps < (followUp ? 1 : toolTurns)) {
      return {
        text: `${tag} Step ${steps + 1}.`,
        toolCalls: followUp
          ? [{ name: "read", arguments: { path: "notes.md" } }]
          : toolBatch(steps, name, parallelTasks),
        ...usage,
      };
    }
    return { text: `${tag} Finished after ${steps} tool turns.`, ...usage };
  };
  return { turns: [], after: ({ request }) => reply(request) };
}

/** Registers the session's scenario and its slow model calls on the local LLM server. */
export function registerSessionScenario(llm: LocalLlmServer, session: SessionPlan): void {
  llm.addScenario(
    session.scenario,
    chaosScenario(session.scenario, session.toolTurns, session.budget?.parallelTasks),
  );
  llm.addFaults([
    { kind: "slow", match: { scenario: session.scenario }, rate: 1, latencyMs: session.modelLatencyMs },
  ]);
}
