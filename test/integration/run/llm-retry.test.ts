/**
 * A rate-limited model call waits at least the retry policy's backoff, even when the server asks
 * for less with `retry-after`.
 */
import { runStageForSuite } from "../../support/run-harness";

jest.setTimeout(120_000);

const stage = runStageForSuite();

test("a retry-after of 1 s does not shorten the backoff: retries wait 2 s, then 4 s", async () => {
  stage().llm.addScenario("limited", { turns: [{ text: "finally" }] });
  stage().llm.addFaults([
    { kind: "rate_limit", match: { scenario: "limited" }, times: 2, retryAfterSeconds: 1 },
  ]);
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:limited] go", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");

  const calls = stage()
    .llm.journal()
    .filter((entry) => entry.scenario === "limited")
    .map((entry) => Date.parse(entry.time));
  expect(calls).toHaveLength(3);
  const gaps = [calls[1]! - calls[0]!, calls[2]! - calls[1]!];
  // The policy's backoff (2 s, then 4 s), not the header's 1 s; small slack for scheduling.
  expect(gaps[0]).toBeGreaterThanOrEqual(1_900);
  expect(gaps[1]).toBeGreaterThanOrEqual(3_900);
});
