/**
 * The floor for orchestration overhead, for the overhead benchmark only: a workflow doing what a
 * run's turns cost Temporal and nothing else — two no-op activities per turn ("llm", "tool")
 * and a last "llm" for the answer.
 */
import { proxyActivities } from "@temporalio/workflow";

export interface BareActivities {
  bareLlm(turn: number): Promise<number>;
  bareTool(turn: number): Promise<number>;
}

const { bareLlm, bareTool } = proxyActivities<BareActivities>({ startToCloseTimeout: "1 minute" });

export async function bareTurns(toolTurns: number): Promise<number> {
  for (let turn = 1; turn <= toolTurns; turn++) {
    await bareLlm(turn);
    await bareTool(turn);
  }
  return bareLlm(toolTurns + 1);
}
