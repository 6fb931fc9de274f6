/** The bare workflow's activities: no work, the "llm" one waiting the model's latency. */
import { setTimeout as sleep } from "node:timers/promises";
import type { BareActivities } from "./bare-workflow";

export function bareActivities(modelLatencyMs: number): BareActivities {
  return {
    async bareOpen() {
      return 0;
    },
    async bareClaim() {
      return 0;
    },
    async bareLlm(turn) {
      if (modelLatencyMs > 0) await sleep(modelLatencyMs);
      return turn;
    },
    async bareTool(turn) {
      return turn;
    },
  };
}
