/** The trace viewer's pages: spans nested under their parents on one time axis, every text escaped. */
import {
  type JaegerSpan,
  type JaegerTrace,
  renderTraceList,
  renderTraceWaterfall,
  spanTree,
} from "../../../src/cli/devstack/trace-pages";

function span(
  id: string,
  parent: string | undefined,
  name: string,
  start: number,
  duration: number,
): JaegerSpan {
  return {
    traceID: "abc123abc123abc1",
    spanID: id,
    operationName: name,
    references: parent ? [{ refType: "CHILD_OF", spanID: parent }] : [],
    startTime: start,
    duration,
    tags: [],
    processID: id === "root" ? "p1" : "p2",
  };
}

const trace: JaegerTrace = {
  traceID: "abc123abc123abc1",
  processes: { p1: { serviceName: "keel-api" }, p2: { serviceName: "keel-worker" } },
  spans: [
    span("tool", "activity", "execute_tool ls", 1_600_000, 100_000),
    span("root", undefined, "POST /v1/sessions/:sessionId/messages", 1_000_000, 1_000_000),
    span("activity", "workflow", "RunActivity:executeTool", 1_500_000, 300_000),
    span("workflow", "root", "RunWorkflow:agentRun", 1_100_000, 900_000),
    span("model", "workflow", "RunActivity:llmTurn", 1_200_000, 200_000),
  ],
};

test("spans come in tree order: each after its parent, siblings by start, with their depth", () => {
  expect(spanTree(trace).map(({ span: { spanID }, depth }) => [spanID, depth])).toEqual([
    ["root", 0],
    ["workflow", 1],
    ["model", 2],
    ["activity", 2],
    ["tool", 3],
  ]);
});

test("a span whose parent is missing from the trace starts a tree of its own; a repeated span shows once", () => {
  const partial: JaegerTrace = {
    ...trace,
    spans: [
      span("orphan", "gone", "RunActivity:llmTurn", 5, 1),
      span("orphan", "gone", "RunActivity:llmTurn", 5, 1),
    ],
  };
  expect(spanTree(partial).map(({ span: { spanID }, depth }) => [spanID, depth])).toEqual([["orphan", 0]]);
});

test("the waterfall places each bar on the trace's time axis", () => {
  const html = renderTraceWaterfall(trace);
  // The tool call starts 60 % into the trace and lasts 10 % of it.
  expect(html).toContain("left:60.000%;width:10.000%");
  expect(html).toContain("left:0.000%;width:100.000%");
  expect(html.indexOf("RunWorkflow:agentRun")).toBeLessThan(html.indexOf("execute_tool ls"));
});

test("a failed span's bar is marked as an error; the API's as the API's", () => {
  const failedTrace: JaegerTrace = {
    ...trace,
    spans: [
      { ...span("root", undefined, "boom", 0, 10), tags: [{ key: "otel.status_code", value: "ERROR" }] },
    ],
  };
  expect(renderTraceWaterfall(failedTrace)).toContain('class="bar keel-api error"');
  expect(renderTraceWaterfall(trace)).not.toMatch(/class="bar[^"]*error/);
});

test("span names and attributes are text, never markup: no script, no element of an attacker's", () => {
  const hostile: JaegerTrace = {
    ...trace,
    spans: [
      {
        ...span("root", undefined, `<script>alert(1)</script>`, 0, 10),
        tags: [
          { key: `"><img src=x onerror=alert(2)>`, value: "</table><script>alert(3)</script>" },
          { key: "keel.session_id", value: "<b>session</b>" },
        ],
      },
    ],
  };
  for (const html of [renderTraceWaterfall(hostile), renderTraceList([hostile])]) {
    expect(html).not.toMatch(/<script|<img|<b>/i);
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
  }
});

test("the list links each trace, newest first, and says when there is none", () => {
  const older: JaegerTrace = {
    ...trace,
    traceID: "0000000000000001",
    spans: [span("root", undefined, "older", 1, 1)],
  };
  const html = renderTraceList([older, trace]);
  expect(html.indexOf('href="/trace/abc123abc123abc1"')).toBeLessThan(
    html.indexOf('href="/trace/0000000000000001"'),
  );
  expect(renderTraceList([], { session: "s1" })).toContain("No traces yet");
});
