/**
 * The demo `keel dev` runs once the stack is up: a run in a copy of `examples/sample-project`,
 * steered while it works, its events shown live, then where to look at it (the Temporal UI link
 * and the S3 key of the session).
 */
import { cpSync } from "node:fs";
import { join } from "node:path";
import type { ApiClient } from "../api-client/client";
import type { AgentEvent } from "../core/events";
import type { S3Settings } from "../store/s3-config";
import { sessionPrefix } from "../store/session-keys";
import { viewerPagePath } from "../viewer/links";
import { EventDetails, followRun } from "./commands/follow";
import { deliverMessage } from "./commands/message";
import { projectRoot } from "./devstack/tools";
import type { Output } from "./output";
import { EventPrinter } from "./render";

export const DEMO_TENANT = "dev";
const SAMPLE_PROJECT = join(projectRoot, "examples/sample-project");
/** Printed when the demo is over; scripts (and the stack's test) wait for it. */
export const DEMO_DONE_LINE = "Demo finished.";

const DEMO_TASK =
  "Add a short note right below the title of README.md saying that this project was touched by the Keel demo, then summarize what you did in one or two sentences.";
/** The local LLM server plays its scripted `demo` scenario when it sees this marker. */
const SCENARIO_MARKER = "[scenario:demo]";
const STEER_TEXT = "While you are at it: keep the note to a single line, please.";

export interface DemoOptions {
  client: ApiClient;
  out: Output;
  model: string;
  /** The local LLM server is in use: the prompt selects its demo scenario. */
  scripted: boolean;
  temporal: { namespace: string; uiUrl?: string };
  s3: S3Settings;
  workspaceRoot: string;
  /**
   * The tools run on a runner (`keel dev --runner`) that keeps one directory per session here: the
   * sample project is copied into the session's before the run (a directory workspace would be
   * copied on the worker, where the runner does not look).
   */
  runnerWorkspaceRoot?: string;
  /** The API's address: the demo prints the session's viewer page there. */
  apiUrl?: string;
  /** The trace viewer's address (`keel dev --traces`): the demo links the session's traces there. */
  tracesUrl?: string;
}

export interface DemoResult {
  sessionId: string;
  workflowId: string;
  runId: string;
  status: string;
  uiLink?: string;
  s3Key: string;
  workspace: string;
}

/**
 * Link to a run's timeline in the Temporal web UI: its model turns and tool calls by their
 * summaries, not the raw event history (workflow ids hold slashes: they are encoded).
 */
function temporalUiLink(uiUrl: string, namespace: string, workflowId: string, runId: string): string {
  return `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}/${runId}/timeline`;
}

/**
 * Link to the Temporal UI's workflow list filtered by a visibility query. Every run that ended on
 * its own shows as Completed there; `KeelStatus` holds its outcome (docs/architecture.md).
 */
export function temporalUiListLink(uiUrl: string, namespace: string, query: string): string {
  return `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows?query=${encodeURIComponent(query)}`;
}

/** The trace viewer's page of one session's traces (its activities carry `keel.session_id`). */
function sessionTracesLink(viewerUrl: string, sessionId: string): string {
  return `${viewerUrl}/?session=${encodeURIComponent(sessionId)}`;
}

/** Runs the demo; resolves when its run has ended. Throws when the API refuses it. */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const { client, out } = options;
  const sessionId = `demo-${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").replace("T", "-")}`;
  const prompt = options.scripted ? `${SCENARIO_MARKER} ${DEMO_TASK}` : DEMO_TASK;
  out.write(
    `\n== Demo: a run in a copy of examples/sample-project (session ${sessionId}, model ${options.model})\n`,
  );
  out.write(`> ${DEMO_TASK}\n`);
  const runnerWorkspace =
    options.runnerWorkspaceRoot !== undefined ? join(options.runnerWorkspaceRoot, sessionId) : undefined;
  if (runnerWorkspace !== undefined) cpSync(SAMPLE_PROJECT, runnerWorkspace, { recursive: true });
  const started = await deliverMessage(client, sessionId, {
    text: prompt,
    model: options.model,
    ...(runnerWorkspace === undefined ? { workspace: { type: "directory", path: SAMPLE_PROJECT } } : {}),
  });
  out.write(`run ${started.delivery}: workflow ${started.workflowId}, run ${started.runId}\n`);

  const printer = new EventPrinter(out, false);
  let steered: Promise<void> | undefined;
  // Steer once the agent has done its first piece of work, while it goes on.
  const onEvent = (event: AgentEvent) => {
    if (steered || event.type !== "tool_execution_end") return;
    printer.note(`→ steering the run: "${STEER_TEXT}"`);
    steered = deliverMessage(client, sessionId, { text: STEER_TEXT, delivery: "steer" }).then(
      (answer) => printer.note(`→ steer ${answer.delivery}; the agent reads it before its next model call`),
      (error: unknown) => printer.note(`→ steer failed: ${(error as Error).message}`),
    );
  };
  const status = await followRun(client, sessionId, 0, printer, {
    details: new EventDetails(client, sessionId),
    onEvent,
  });
  await steered;

  const s3Key = `s3://${options.s3.bucket}/${sessionPrefix(options.s3.prefix, { tenantId: DEMO_TENANT, sessionId })}`;
  const uiLink = options.temporal.uiUrl
    ? temporalUiLink(options.temporal.uiUrl, options.temporal.namespace, started.workflowId, started.runId)
    : undefined;
  const workspace = runnerWorkspace ?? join(options.workspaceRoot, DEMO_TENANT, sessionId);
  out.write(
    [
      "",
      `Run ${status ?? "ended"}. Look at it:`,
      ...(uiLink ? [`  Temporal UI   ${uiLink}`] : []),
      ...(options.apiUrl ? [`  transcript    ${options.apiUrl}${viewerPagePath(sessionId)}`] : []),
      ...(options.tracesUrl ? [`  traces        ${sessionTracesLink(options.tracesUrl, sessionId)}`] : []),
      ...(options.temporal.uiUrl
        ? [
            `  failed runs   ${temporalUiListLink(options.temporal.uiUrl, options.temporal.namespace, 'KeelStatus = "failed"')}`,
          ]
        : []),
      `  S3 session    ${s3Key}`,
      `  workspace     ${workspace}`,
      `  CLI           keel show ${sessionId} · keel events ${sessionId} · keel export ${sessionId}`,
      DEMO_DONE_LINE,
      "",
    ].join("\n"),
  );
  return {
    sessionId,
    workflowId: started.workflowId,
    runId: started.runId,
    status: status ?? "unknown",
    uiLink,
    s3Key,
    workspace,
  };
}
