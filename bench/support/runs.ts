/**
 * Runs for benchmarks: a scripted "list the workspace N times, then answer" conversation and a
 * helper that delivers its prompt through RunClient and waits for the run to end.
 */
import { randomUUID } from "node:crypto";
import {
  DEFAULT_RUN_SETTINGS,
  type RunResult,
  type RunSettings,
  runWorkflowId,
} from "../../src/contracts/runs";
import type { LocalLlmServer } from "../../src/providers/local-server";
import { RunClient } from "../../src/run-client/run-client";
import type { BenchStack } from "./stack";

/** Turn and tool-call limits far enough above a benchmark's turn count never to end it early. */
const LIMIT_HEADROOM = 10;

/**
 * Registers (once) a scenario whose first `toolTurns` replies each call `ls` and whose next
 * reply is the final answer; returns its name. A turn is one model call answering with one fast
 * tool call.
 */
export function lsLoopScenario(llm: LocalLlmServer, toolTurns: number): string {
  const name = `ls-loop-${toolTurns}`;
  llm.addScenario(name, {
    turns: [],
    after: ({ turn }) =>
      turn < toolTurns
        ? {
            text: `Listing the workspace (${turn + 1}).`,
            toolCalls: [{ name: "ls", arguments: { path: "." } }],
          }
        : { text: "Done: the workspace was listed." },
  });
  return name;
}

export function benchSettings(toolTurns: number): RunSettings {
  return {
    ...DEFAULT_RUN_SETTINGS,
    model: "local-chat",
    limits: {
      ...DEFAULT_RUN_SETTINGS.limits,
      maxTurns: toolTurns + LIMIT_HEADROOM,
      maxToolCalls: toolTurns + LIMIT_HEADROOM,
      // One execution: the history benchmark measures one run's growth.
      turnsPerExecution: toolTurns + LIMIT_HEADROOM,
    },
  };
}

export interface KeelRun {
  ref: { tenantId: string; sessionId: string };
  result: RunResult;
  /** From the start of the delivery to the run's result. */
  wallMs: number;
}

/**
 * Starts one run of `toolTurns` ls turns plus the answer and waits for its result; `onStarted`
 * is called once the run has started (to attach subscribers).
 */
export async function runLsLoop(
  stack: BenchStack,
  runs: RunClient,
  toolTurns: number,
  tenantId = "bench",
  onStarted?: (ref: { tenantId: string; sessionId: string }) => void,
): Promise<KeelRun> {
  const scenario = lsLoopScenario(stack.llm, toolTurns);
  const ref = { tenantId, sessionId: `s-${randomUUID().slice(0, 12)}` };
  const started = performance.now();
  await runs.deliver(
    ref,
    { text: `[scenario:${scenario}] list the workspace`, mode: "auto" },
    benchSettings(toolTurns),
  );
  onStarted?.(ref);
  const result = (await stack.client.workflow.getHandle(runWorkflowId(ref)).result()) as RunResult;
  const wallMs = performance.now() - started;
  if (result.status !== "completed") throw new Error(`run ended ${result.status}: ${result.reason}`);
  return { ref, result, wallMs };
}

export function runClient(stack: BenchStack, taskQueue: string): RunClient {
  return new RunClient(stack.client, taskQueue);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
