/**
 * The floor a Keel run is measured against: a workflow doing what a run's turns cost Temporal
 * and nothing else — an "llm" and a "tool" activity per turn and a last "llm" for the answer.
 * With `runStart`, it also has a run's two start activities ("open" first, "claim" before the
 * first tool call), so its activity count equals a Keel run's (openSession, claimWorkspace).
 */
import { proxyActivities } from "@temporalio/workflow";

export interface BareActivities {
  bareOpen(): Promise<number>;
  bareClaim(): Promise<number>;
  bareLlm(turn: number): Promise<number>;
  bareTool(turn: number): Promise<number>;
}

const { bareOpen, bareClaim, bareLlm, bareTool } = proxyActivities<BareActivities>({
  startToCloseTimeout: "1 minute",
});

export async function bareTurns(toolTurns: number, runStart = false): Promise<number> {
  if (runStart) await bareOpen();
  for (let turn = 1; turn <= toolTurns; turn++) {
    await bareLlm(turn);
    if (runStart && turn === 1) await bareClaim();
    await bareTool(turn);
  }
  return bareLlm(toolTurns + 1);
}
