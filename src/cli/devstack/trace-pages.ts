/**
 * The pages of `keel dev --traces`' trace viewer, rendered from Jaeger's query API answers: a list
 * of recent traces and one trace as a waterfall (spans as bars on a shared time axis, nested under
 * their parents, each with its attributes). Pure functions. Span names and attributes carry what
 * callers, models and tools wrote, so every text is escaped and the pages hold no script: they are
 * served with a policy that allows none (trace-viewer.ts).
 */

/** A span as Jaeger's query API (`/api/traces`) answers it; times in microseconds. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; spanID: string }[];
  startTime: number;
  duration: number;
  tags: { key: string; value: unknown }[];
  processID: string;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

const STYLE = `
body { font: 13px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1f2328; }
h1 { font-size: 1.2rem; } a { color: #0969da; } table { border-collapse: collapse; width: 100%; }
td, th { padding: 0.25rem 0.5rem; border-bottom: 1px solid #d0d7de; text-align: left; vertical-align: top; }
.span { display: grid; grid-template-columns: 34rem 1fr; align-items: center; border-bottom: 1px solid #eaeef2; }
.span summary { cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.track { position: relative; height: 0.9rem; }
.bar { position: absolute; top: 0; bottom: 0; min-width: 2px; background: #54aeff; border-radius: 2px; }
.bar.keel-api { background: #8250df; } .bar.error { background: #cf222e; }
.attrs { grid-column: 1 / span 2; margin: 0.25rem 0 0.5rem 1rem; font-family: ui-monospace, monospace; font-size: 12px; }
.muted { color: #656d76; }
`;

/** Text safe inside HTML elements and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

const milliseconds = (micros: number) => `${(micros / 1000).toFixed(micros < 10_000 ? 1 : 0)} ms`;

const tagOf = (span: JaegerSpan, key: string) => span.tags.find((tag) => tag.key === key)?.value;

function parentIdOf(span: JaegerSpan, present: Set<string>): string | undefined {
  const parent = span.references.find((ref) => ref.refType === "CHILD_OF")?.spanID;
  return parent !== undefined && present.has(parent) ? parent : undefined;
}

/** The trace's spans in tree order (each after its parent, siblings by start), with their depth. */
export function spanTree(trace: JaegerTrace): { span: JaegerSpan; depth: number }[] {
  const present = new Set(trace.spans.map((span) => span.spanID));
  const children = new Map<string | undefined, JaegerSpan[]>();
  for (const span of trace.spans) {
    const parent = parentIdOf(span, present);
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const ordered: { span: JaegerSpan; depth: number }[] = [];
  const seen = new Set<string>();
  const visit = (parent: string | undefined, depth: number) => {
    const spans = [...(children.get(parent) ?? [])].sort((a, b) => a.startTime - b.startTime);
    for (const span of spans) {
      // A span listed twice (Jaeger merges what several processes sent) is shown once.
      if (seen.has(span.spanID)) continue;
      seen.add(span.spanID);
      ordered.push({ span, depth });
      visit(span.spanID, depth + 1);
    }
  };
  visit(undefined, 0);
  return ordered;
}

/** The span a trace starts from (no parent in it), for the list's summary. */
function rootOf(trace: JaegerTrace): JaegerSpan | undefined {
  return spanTree(trace)[0]?.span;
}

function failed(span: JaegerSpan): boolean {
  return tagOf(span, "error") === true || tagOf(span, "otel.status_code") === "ERROR";
}

/** The list page: one row per trace, newest first, each linking to its waterfall. */
export function renderTraceList(traces: JaegerTrace[], filter: { session?: string } = {}): string {
  const rows = [...traces]
    .map((trace) => ({ trace, root: rootOf(trace) }))
    .sort((a, b) => (b.root?.startTime ?? 0) - (a.root?.startTime ?? 0))
    .map(({ trace, root }) => {
      const session = trace.spans
        .map((span) => tagOf(span, "keel.session_id"))
        .find((id) => id !== undefined);
      const services = [...new Set(Object.values(trace.processes).map((process) => process.serviceName))];
      const started = root ? new Date(root.startTime / 1000).toISOString() : "";
      return `<tr><td><a href="/trace/${encodeURIComponent(trace.traceID)}">${escapeHtml(root?.operationName ?? trace.traceID)}</a></td><td>${escapeHtml(String(session ?? ""))}</td><td>${escapeHtml(started)}</td><td>${root ? milliseconds(root.duration) : ""}</td><td>${trace.spans.length}</td><td>${escapeHtml(services.join(", "))}</td></tr>`;
    })
    .join("");
  const title = filter.session ? `Traces of session ${filter.session}` : "Recent traces";
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>${
      rows
        ? `<table><thead><tr><th>root span</th><th>session</th><th>started (UTC)</th><th>duration</th><th>spans</th><th>services</th></tr></thead><tbody>${rows}</tbody></table>`
        : `<p class="muted">No traces yet: start a run, and its spans arrive within a few seconds.</p>`
    }`,
  );
}

/** One trace as a waterfall: a row per span, nested, its bar placed on the trace's time axis. */
export function renderTraceWaterfall(trace: JaegerTrace): string {
  const tree = spanTree(trace);
  const start = Math.min(...trace.spans.map((span) => span.startTime));
  const end = Math.max(...trace.spans.map((span) => span.startTime + span.duration));
  const total = Math.max(1, end - start);
  const rows = tree
    .map(({ span, depth }) => {
      const service = trace.processes[span.processID]?.serviceName ?? "";
      const left = ((span.startTime - start) / total) * 100;
      const width = (span.duration / total) * 100;
      const classes = ["bar", service === "keel-api" ? "keel-api" : "", failed(span) ? "error" : ""]
        .filter(Boolean)
        .join(" ");
      const attrs = span.tags
        .map((tag) => `<tr><td>${escapeHtml(tag.key)}</td><td>${escapeHtml(String(tag.value))}</td></tr>`)
        .join("");
      return `<details class="span"><summary style="padding-left:${depth}rem">${escapeHtml(span.operationName)} <span class="muted">${escapeHtml(service)} · ${milliseconds(span.duration)}</span></summary><div class="track"><div class="${classes}" style="left:${left.toFixed(3)}%;width:${width.toFixed(3)}%"></div></div><table class="attrs">${attrs}</table></details>`;
    })
    .join("");
  const root = tree[0]?.span;
  return page(
    `Trace ${trace.traceID}`,
    `<p><a href="/">all traces</a></p><h1>${escapeHtml(root?.operationName ?? trace.traceID)}</h1><p class="muted">trace ${escapeHtml(trace.traceID)} · ${trace.spans.length} spans · ${milliseconds(total)}</p>${rows}`,
  );
}
