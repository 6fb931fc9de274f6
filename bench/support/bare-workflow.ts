/**
 * The floor a Keel run is measured against: a workflow doing what a run's turns cost Temporal
 * and nothing else — an "llm" and a "tool" activity per turn and a last "llm" for the answer.
 * With `runStart`, it also has a run's two start activities ("open" first, "claim" before the
 * first tool call), so its activity count equals a Keel run's (openSession, claimWorkspace).
 *
 * `shapedTurns` is the same workflow using Temporal the way a Keel run does, still doing no work:
 * started by update-with-start with search attributes and a summary, a status upsert when it ends,
 * activity summaries, and its tool activities on another task queue (a Keel run's go to the queue of the
 * worker holding the workspace, so Temporal cannot hand them over eagerly). What it costs over
 * `bareTurns` is the price of those features; what Keel costs over it is Keel's own work.
 */
import {
  condition,
  defineUpdate,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from "@temporalio/workflow";
import { RunStatusAttribute } from "../../src/workflows/search-attributes";

export interface BareActivities {
  bareOpen(): Promise<number>;
  bareClaim(): Promise<number>;
  bareLlm(turn: number): Promise<number>;
  bareTool(turn: number): Promise<number>;
}

const ACTIVITY_OPTIONS = { startToCloseTimeout: "1 minute" } as const;
const { bareOpen, bareClaim, bareLlm, bareTool } = proxyActivities<BareActivities>(ACTIVITY_OPTIONS);

export async function bareTurns(toolTurns: number, runStart = false): Promise<number> {
  if (runStart) await bareOpen();
  for (let turn = 1; turn <= toolTurns; turn++) {
    await bareLlm(turn);
    if (runStart && turn === 1) await bareClaim();
    await bareTool(turn);
  }
  return bareLlm(toolTurns + 1);
}

/** The update a shaped run is started with (as a Keel run is started with its first message). */
export const shapedPromptUpdate = defineUpdate<{ accepted: true }, [string]>("prompt");

export async function shapedTurns(toolTurns: number, toolTaskQueue: string): Promise<number> {
  let prompted = false;
  setHandler(shapedPromptUpdate, () => {
    prompted = true;
    return { accepted: true as const };
  });
  await condition(() => prompted);
  const shared = proxyActivities<BareActivities>(ACTIVITY_OPTIONS);
  const tools = proxyActivities<BareActivities>({ ...ACTIVITY_OPTIONS, taskQueue: toolTaskQueue });
  await shared.bareOpen.executeWithOptions({ summary: "open" }, []);
  for (let turn = 1; turn <= toolTurns; turn++) {
    await shared.bareLlm.executeWithOptions({ summary: `llm turn ${turn}` }, [turn]);
    if (turn === 1) await shared.bareClaim.executeWithOptions({ summary: "claim" }, []);
    await tools.bareTool.executeWithOptions({ summary: `tool: ls ${turn}` }, [turn]);
  }
  const answer = await shared.bareLlm.executeWithOptions({ summary: `llm turn ${toolTurns + 1}` }, [
    toolTurns + 1,
  ]);
  upsertSearchAttributes([{ key: RunStatusAttribute, value: "completed" }]);
  return answer;
}
