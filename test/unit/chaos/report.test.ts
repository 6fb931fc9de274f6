/** The chaos verdict: a known, documented defect is reported but left out of the verdict. */
import { emptyFaultTally } from "../../chaos/faults";
import { loadFigures } from "../../chaos/load";
import { CHAOS_PRESETS } from "../../chaos/options";
import { makeChaosPlan } from "../../chaos/plan";
import { KNOWN_DEFECTS, renderMarkdown, summarize } from "../../chaos/report";
import type { Verdict } from "../../chaos/verify";

function summaryWith(kinds: string[]) {
  const options = CHAOS_PRESETS.short;
  const verdict: Verdict = {
    violations: kinds.map((kind) => ({ sessionId: "s1", kind, detail: "…" })),
    repeatedCalls: [],
    entriesChecked: 0,
    sessionsExported: 0,
    sessionsOpenedByPi: 0,
    usableAfterAbort: 0,
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

test("a known defect is listed and counted, and the verdict stays PASS", () => {
  expect(KNOWN_DEFECTS.has("history_not_replayable")).toBe(true);
  const summary = summaryWith(["history_not_replayable"]);
  expect(summary.failures).toEqual([]);
  const markdown = renderMarkdown(summary);
  expect(markdown).toContain("**PASS**");
  expect(markdown).toContain("Known defects seen (not in the verdict): 1 history_not_replayable.");
  expect(markdown).toContain("| history_not_replayable | 1 | no: known defect, docs/architecture.md");
});

test("any other violation fails the run, and is counted alone", () => {
  const summary = summaryWith(["history_not_replayable", "seq_gap", "seq_gap"]);
  expect(summary.failures).toEqual(["2 violations"]);
  expect(renderMarkdown(summary)).toContain("**FAIL: 2 violations**");
});
