/** The eval report page: every text escaped, no script, links to the transcripts. */
import { evalReportHtml } from "../../../src/cli/eval-report-page";
import type { EvalReport } from "../../../src/evals/report";

const hostile = `<script>alert(1)</script>"'&`;

const report: EvalReport = {
  evalId: "ev0123456789abcdef",
  createdAt: "2026-12-06T00:00:00.000Z",
  trials: 2,
  finished: 2,
  costUsd: 0.02,
  models: [
    {
      model: hostile,
      trials: 2,
      finished: 2,
      passed: 1,
      passRate: 0.5,
      interval: [0.09, 0.91],
      costUsd: 0.02,
      tokens: { input: 10, output: 5 },
      meanTurns: 2,
      meanDurationMs: 1500,
    },
  ],
  cases: [{ caseId: "c1", results: [{ model: hostile, passed: 1, finished: 2, sessions: ["s1", "s2"] }] }],
  failing: [
    {
      index: 1,
      caseId: "c1",
      model: hostile,
      repeat: 1,
      sessionId: "s2",
      status: "completed",
      reason: hostile,
      failed: [hostile],
    },
  ],
};

test("the page escapes every text, holds no script and links each failing trial to its transcript", () => {
  const { html } = evalReportHtml(
    {
      eval: { evalId: report.evalId, name: hostile, createdAt: report.createdAt },
      progress: { state: "completed", trials: 2, finished: 2, costUsd: 0.02 },
      report,
    },
    "https://keel.example.com",
  );
  expect(html).not.toContain("<script");
  expect(html).not.toContain(hostile);
  expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;&quot;'&amp;");
  expect(html).toMatch(
    /Content-Security-Policy" content="default-src 'none'; style-src 'sha256-[^']+'; img-src 'none'/,
  );
  expect(html).toContain('<a href="https://keel.example.com/view/sessions/s2">s2</a>');
  expect(html).toContain("50 %");
  expect(html).toContain("9 %–91 %");
});
