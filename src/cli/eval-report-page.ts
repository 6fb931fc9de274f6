/**
 * An eval's report as one offline HTML file (`keel eval show EVAL --html FILE`), in the session
 * viewer's style: the per-model table, the per-case grid and the failing trials, each linked to
 * its transcript in the API's session viewer. Rendered here, every text escaped; the page holds no
 * script at all, and its Content-Security-Policy allows nothing but its one inline style.
 */
import type { EvalReport } from "../evals/report";
import { cspHash, escapeHtml, htmlDocument, VIEWER_STYLE } from "../viewer/page";

/** What the report shows of an eval: the API's `GET /v1/evals/{id}` answer. */
export interface EvalReportView {
  eval: { evalId: string; name?: string; createdAt: string };
  progress: { state: string; trials: number; finished: number; costUsd: number; maxCostUsd?: number };
  report: EvalReport;
}

const REPORT_STYLE = `${VIEWER_STYLE}
table { border-collapse: collapse; margin: .6rem 0; } th, td { padding: .2rem .6rem; text-align: left; border-bottom: 1px solid var(--line); }
td.num { text-align: right; font-variant-numeric: tabular-nums; } .pass { color: var(--add); } .fail { color: var(--del); }
`;

const percent = (value: number) => `${(value * 100).toFixed(0)} %`;
const usd = (value: number) => `$${value.toFixed(4)}`;

/** The page: `viewerBase` is the API's URL, where each failing trial's transcript opens. */
export function evalReportHtml(view: EvalReportView, viewerBase: string): { html: string } {
  const { report, progress } = view;
  const transcript = (sessionId: string) =>
    `<a href="${escapeHtml(`${viewerBase}/view/sessions/${encodeURIComponent(sessionId)}`)}">${escapeHtml(sessionId)}</a>`;
  const models = report.models
    .map(
      (model) =>
        `<tr><td>${escapeHtml(model.model)}</td><td class="num">${percent(model.passRate)}</td><td class="num">${percent(model.interval[0])}–${percent(model.interval[1])}</td><td class="num">${model.passed}/${model.finished}</td><td class="num">${usd(model.costUsd)}</td><td class="num">${model.tokens.input} / ${model.tokens.output}</td><td class="num">${model.meanTurns.toFixed(1)}</td><td class="num">${(model.meanDurationMs / 1000).toFixed(1)} s</td></tr>`,
    )
    .join("\n");
  const cases = report.cases
    .map(
      (row) =>
        `<tr><td>${escapeHtml(row.caseId)}</td>${row.results
          .map((result) => {
            const kind = result.finished === 0 ? "" : result.passed === result.finished ? "pass" : "fail";
            return `<td class="num ${kind}">${result.passed}/${result.finished}</td>`;
          })
          .join("")}</tr>`,
    )
    .join("\n");
  const failing = report.failing
    .map(
      (trial) =>
        `<div class="entry kind-tool_result"><div class="title"><span class="kind">${escapeHtml(trial.caseId)}</span><span>${escapeHtml(trial.model)} #${trial.repeat + 1}</span><span class="error">${escapeHtml(trial.status)}</span>${transcript(trial.sessionId)}</div>${trial.reason ? `<pre class="text">${escapeHtml(trial.reason)}</pre>` : ""}${trial.failed.map((line) => `<pre class="output error">${escapeHtml(line)}</pre>`).join("")}</div>`,
    )
    .join("\n");
  const title = `Keel eval ${view.eval.evalId}${view.eval.name ? ` · ${view.eval.name}` : ""}`;
  const policy = `default-src 'none'; style-src ${cspHash(REPORT_STYLE)}; img-src 'none'; base-uri 'none'; form-action 'none'`;
  const body = `<h1>${escapeHtml(title)}</h1>
<div class="facts">${escapeHtml(progress.state)} · ${progress.finished}/${progress.trials} trials · ${usd(progress.costUsd)}${progress.maxCostUsd !== undefined ? ` of ${usd(progress.maxCostUsd)}` : ""} · started ${escapeHtml(view.eval.createdAt)}</div>
<table><thead><tr><th>model</th><th>pass</th><th>95 % interval</th><th>passed</th><th>cost</th><th>tokens in / out</th><th>turns</th><th>time</th></tr></thead>
<tbody>${models}</tbody></table>
<table><thead><tr><th>case</th>${report.models.map((model) => `<th>${escapeHtml(model.model)}</th>`).join("")}</tr></thead>
<tbody>${cases}</tbody></table>
${report.failing.length > 0 ? `<h1>Failing trials</h1>\n${failing}` : ""}`;
  return { html: htmlDocument({ title, policy, style: REPORT_STYLE, body }) };
}
