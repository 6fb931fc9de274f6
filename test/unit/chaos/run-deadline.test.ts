/**
 * When a chaos run counts as stuck: the run bound applies from its delivery or from the last
 * fault, whichever is later, so a run the faults kept delaying is not called stuck while they last.
 */
import { runDeadline } from "../../chaos/sessions";

const BOUND_MS = 180_000;

describe("runDeadline", () => {
  it("is the bound after delivery when no fault came after it", () => {
    expect(runDeadline(1_000_000, 900_000, BOUND_MS)).toBe(1_180_000);
  });

  it("moves with faults that keep coming: a run still delayed by kills 4 minutes in is not stuck yet", () => {
    const deliveredAt = 0;
    const lastKillAt = 240_000;
    const deadline = runDeadline(deliveredAt, lastKillAt, BOUND_MS);
    expect(deadline).toBe(420_000);
    expect(deadline).toBeGreaterThan(deliveredAt + 270_000);
  });
});
