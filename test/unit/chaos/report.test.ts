/** The chaos verdict: every violation fails it, a history that does not replay included. */
import { emptyFaultTally } from "../../chaos/faults";
import { loadFigures } from "../../chaos/load";
import { CHAOS_PRESETS } from "../../chaos/options";
import { makeChaosPlan } from "../../chaos/plan";
import { failureLines, renderMarkdown, summarize } from "../../chaos/report";
import type { Verdict } from "../../chaos/verify";

function summaryWith(kinds: string[]) {
  const options = CHAOS_PRESETS.short;
  const verdict: Verdict = {
    violations: kinds.map((kind) => ({ sessionId: "s1", kind, detail: "…" })),
    repeatedCalls: [],
    entriesChecked: 0,
    sessionsExported: 0,
    sessionsOpenedByPi: 0,
    subAgentSessions: 0,
    usableAfterAbort: 0,
    workspacesOnTwoDisks: 0,
    sessions: [],
  };
  return summarize({
    options,
    plan: makeChaosPlan(options),
    records: [],
    faults: emptyFaultTally(),
    verdict,
    modelCalls: 0,
    load: loadFigures([]),
    wallMs: 1_000,
  });
}

test("no violation: PASS", () => {
  const summary = summaryWith([]);
  expect(summary.failures).toEqual([]);
  expect(renderMarkdown(summary)).toContain("**PASS**");
});

test("every violation fails the run and is counted by kind, a history that does not replay included", () => {
  const summary = summaryWith(["history_not_replayable", "seq_gap", "seq_gap"]);
  expect(summary.failures).toEqual(["3 violations"]);
  const markdown = renderMarkdown(summary);
  expect(markdown).toContain("**FAIL: 3 violations**");
  expect(markdown).toContain("| seq_gap | 2 |");
  expect(markdown).toContain("| history_not_replayable | 1 |");
});

test("the reasons of a failure are lines of their own, at most 12 and one saying how many more", () => {
  const summary = summaryWith(["seq_gap"]);
  expect(failureLines(summary)).toEqual(["violation in s1: seq_gap: …"]);
  summary.faults.errors.push("kill at +10 ms failed: the primary worker did not start\nwithin 300000 ms");
  expect(failureLines(summary)[1]).toBe(
    "fault not applied: kill at +10 ms failed: the primary worker did not start within 300000 ms",
  );
  const many = summaryWith(Array.from({ length: 20 }, () => "seq_gap"));
  const lines = failureLines(many);
  expect(lines).toHaveLength(13);
  expect(lines.at(-1)).toBe("… and 8 more (results file)");
  expect(failureLines(summaryWith([]))).toEqual([]);
});
