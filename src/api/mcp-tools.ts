/**
 * The tools of Keel's MCP server (docs/integrations.md, "MCP server"). Each tool is an adapter
 * over one or two of the API's own routes, called in process with the caller's credentials
 * (`ApiCall`): the routes' schemas, tenant scoping, quotas, idempotency and problems apply
 * unchanged, and a problem answer becomes a tool error (`isError`) carrying its title, detail and
 * slug. The tools' input schemas are the routes' own zod schemas where a route has one, so an MCP
 * client is told what the API accepts.
 */
import { randomUUID } from "node:crypto";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { sha256Hex } from "../store/digest";
import { MAX_LIST_LIMIT } from "../store/session-store";
import type { ViewModel } from "../viewer/view-model";
import { IDEMPOTENCY_KEY_PATTERN } from "./idempotency";
import { transcriptSummary } from "./mcp-transcript";
import {
  AbortBodySchema,
  ApprovalBodySchema,
  ApprovalParamsSchema,
  type messageBodySchema,
  SessionIdSchema,
} from "./schemas";

/** A request to the API with the MCP caller's credentials. */
export type ApiCall = (
  method: "GET" | "POST",
  path: string,
  options?: { json?: unknown; headers?: Record<string, string> },
) => Promise<Response>;

/**
 * Longest wait of one `wait_for_run` call. A call answers within it plus one read of the session,
 * which takes up to about 10 s when no worker answers the run's state query: together under API
 * Gateway's 30 s limit on a request.
 */
const MAX_WAIT_SECONDS = 20;
const DEFAULT_WAIT_SECONDS = 15;
const WAIT_POLL_MS = 500;
const DEFAULT_TRANSCRIPT_CHARS = 20_000;
const MAX_TRANSCRIPT_CHARS = 100_000;

const IdempotencyKeySchema = z
  .string()
  .regex(new RegExp(IDEMPOTENCY_KEY_PATTERN))
  .optional()
  .describe(
    "Sent as the Idempotency-Key header: a retried call with the same key answers as the first one and starts nothing again",
  );

type Json = Record<string, unknown>;

/** A successful answer: its JSON as text and as structured content. */
function ok(body: Json, text = JSON.stringify(body, null, 2)): CallToolResult {
  return { content: [{ type: "text", text }], structuredContent: body };
}

/** A problem answer as a tool error: `<title> (<status> <slug>): <detail>`. */
async function problemResult(response: Response): Promise<CallToolResult> {
  const problem = (await response.json().catch(() => ({}))) as Json;
  const slug = typeof problem.type === "string" ? problem.type.split("/").at(-1) : undefined;
  const title = typeof problem.title === "string" ? problem.title : `HTTP ${response.status}`;
  const detail = typeof problem.detail === "string" ? `: ${problem.detail}` : "";
  return {
    isError: true,
    content: [{ type: "text", text: `${title} (${response.status}${slug ? ` ${slug}` : ""})${detail}` }],
    structuredContent: { problem },
  };
}

/** Calls the route; a 2xx answer goes through `onOk`, anything else is a tool error. */
async function viaRoute(
  response: Promise<Response>,
  onOk: (body: Json) => CallToolResult = (body) => ok(body),
): Promise<CallToolResult> {
  const answer = await response;
  if (!answer.ok) return problemResult(answer);
  return onOk((await answer.json()) as Json);
}

const sessionPath = (sessionId: string, rest = "") => `/v1/sessions/${encodeURIComponent(sessionId)}${rest}`;
const idempotencyHeader = (key: string | undefined): Record<string, string> =>
  key === undefined ? {} : { "idempotency-key": key };

/**
 * The id of a session start_task makes: random, or, for a start with an idempotency key, derived
 * from the key, so that a retry reaches the same session (and the route's idempotency record,
 * which is kept per path, answers it as the first).
 */
function newSessionId(idempotencyKey: string | undefined): string {
  return idempotencyKey === undefined ? randomUUID() : `task-${sha256Hex(idempotencyKey).slice(0, 40)}`;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** The message route's body schema for this deployment, built once (it is not cheap to build). */
export type MessageBodySchema = ReturnType<typeof messageBodySchema>;

/** Registers the tools on `server` (one per request: see mcp-endpoint.ts). */
export function registerKeelTools(server: McpServer, call: ApiCall, messageBody: MessageBodySchema): void {
  server.registerTool(
    "start_task",
    {
      title: "Start a coding task",
      description:
        "Start a coding agent run on Keel: in a new session (omit sessionId; one is made) or in an existing idle session (its history and workspace carry over). `text` is the task. Optional: `workspace` (where the files come from, e.g. {type: 'git', url, ref}), `model`, `limits` ({maxTurns, maxToolCalls, maxCostUsd, maxTokens}), `tools`, `agents`, `network`, `secrets`, `policy` (approvals). With an idempotencyKey and no sessionId, the new session's id is derived from the key, so a retry reaches the same session and starts nothing again. Answers the session id and run id at once; the run goes on durably: follow it with wait_for_run, then read get_diff and get_transcript. A session whose run is still live answers a run-busy error: use send_message to steer it.",
      inputSchema: messageBody.omit({ delivery: true }).extend({
        sessionId: SessionIdSchema.optional().describe(
          "An existing session to continue; omitted: a new session with a random id",
        ),
        idempotencyKey: IdempotencyKeySchema,
      }),
    },
    async ({ sessionId, idempotencyKey, ...body }) => {
      const id = sessionId ?? newSessionId(idempotencyKey);
      return viaRoute(
        call("POST", sessionPath(id, "/messages"), {
          json: { ...body, delivery: "reject" },
          headers: idempotencyHeader(idempotencyKey),
        }),
      );
    },
  );

  server.registerTool(
    "send_message",
    {
      title: "Send a message to a session",
      description:
        "Send a follow-up or steering message to a session. A session with no live run (idle, or new) starts a run with the message and the default settings (use start_task to choose them). To a live run, `delivery` says how it is taken: auto (default) and steer (read at the run's next turn), followUp (read when the run would stop), interrupt (the current turn is abandoned for it), reject (refused: run-busy).",
      inputSchema: messageBody.pick({ text: true, delivery: true }).extend({
        sessionId: SessionIdSchema,
        idempotencyKey: IdempotencyKeySchema,
      }),
    },
    async ({ sessionId, idempotencyKey, ...body }) =>
      viaRoute(
        call("POST", sessionPath(sessionId, "/messages"), {
          json: body,
          headers: idempotencyHeader(idempotencyKey),
        }),
      ),
  );

  server.registerTool(
    "get_run",
    {
      title: "A session's latest run",
      description:
        "The session's status (idle, running, waiting_approval, paused) and its latest run: runId, status (completed, aborted, failed, …), turn, usage, cost, endReason, error, and the tool calls waiting for approval (pendingToolCalls).",
      inputSchema: z.object({ sessionId: SessionIdSchema }),
      annotations: { readOnlyHint: true },
    },
    async ({ sessionId }) => viaRoute(call("GET", sessionPath(sessionId))),
  );

  server.registerTool(
    "wait_for_run",
    {
      title: "Wait for a session's run",
      description: `Wait up to timeoutSeconds (1-${MAX_WAIT_SECONDS}, default ${DEFAULT_WAIT_SECONDS}) for the session's run to need nothing more from Keel. Answers {outcome, session}: outcome "ended" (the run finished: see session.run.status), "waiting_approval" (answer its pendingToolCalls with answer_approval), "paused" (a budget was reached), or "running" when the wait ended first (call again). While the run cannot be read (its workers are down: 503) it keeps waiting; a wait that ends so answers that error, and calling again is right.`,
      inputSchema: z.object({
        sessionId: SessionIdSchema,
        timeoutSeconds: z.number().int().min(1).max(MAX_WAIT_SECONDS).default(DEFAULT_WAIT_SECONDS),
      }),
      annotations: { readOnlyHint: true },
    },
    async ({ sessionId, timeoutSeconds }, extra) => {
      const deadline = Date.now() + timeoutSeconds * 1000;
      for (;;) {
        const response = await call("GET", sessionPath(sessionId));
        // 503: the run cannot be read now (no worker answers, Temporal or S3 down): the wait goes
        // on, and answers the problem only when it ends on one.
        const transient = response.status === 503 && Date.now() < deadline && !extra.signal.aborted;
        if (transient) {
          await pause(WAIT_POLL_MS, extra.signal);
          continue;
        }
        if (!response.ok) return problemResult(response);
        const session = (await response.json()) as Json;
        const status = session.status;
        if (status !== "running" || Date.now() >= deadline || extra.signal.aborted) {
          const outcome = status === "idle" ? "ended" : String(status);
          return ok({ outcome, session });
        }
        await pause(Math.min(WAIT_POLL_MS, Math.max(0, deadline - Date.now())), extra.signal);
      }
    },
  );

  server.registerTool(
    "get_transcript",
    {
      title: "A session's transcript",
      description:
        "The session's transcript, condensed: each entry on its current branch with its text, tool calls (→) and their outputs (←), cut to maxChars (the task and the newest entries are kept).",
      inputSchema: z.object({
        sessionId: SessionIdSchema,
        maxChars: z.number().int().min(1_000).max(MAX_TRANSCRIPT_CHARS).default(DEFAULT_TRANSCRIPT_CHARS),
      }),
      annotations: { readOnlyHint: true },
    },
    async ({ sessionId, maxChars }) =>
      viaRoute(call("GET", sessionPath(sessionId, "/view")), (body) => {
        const summary = transcriptSummary(body as unknown as ViewModel & { status?: string }, maxChars);
        return ok(
          {
            sessionId,
            status: body.status,
            entries: summary.entries,
            shownEntries: summary.shownEntries,
            totals: body.totals,
          },
          summary.text,
        );
      }),
  );

  server.registerTool(
    "get_diff",
    {
      title: "A session's workspace diff",
      description:
        "What the session's tools changed in its workspace, from the files its first tool call found to the files now: the changed paths (added, modified, deleted) and a unified diff (bounded; binary and large files are named only).",
      inputSchema: z.object({ sessionId: SessionIdSchema }),
      annotations: { readOnlyHint: true },
    },
    async ({ sessionId }) =>
      viaRoute(call("GET", sessionPath(sessionId, "/diff")), (body) => {
        const files = body.files as Array<{ path: string; change: string }>;
        const listing = files.map((file) => `${file.change} ${file.path}`).join("\n");
        const text =
          files.length === 0
            ? "No changes."
            : `${listing}\n\n${String(body.patch)}${body.truncated ? "\n(the diff is cut here)" : ""}`;
        return ok(body, text);
      }),
  );

  server.registerTool(
    "answer_approval",
    {
      title: "Approve or reject a tool call",
      description:
        "Approve or reject a tool call that waits for approval (get_run's pendingToolCalls with state awaiting_approval). `args` replaces the call's arguments when approving; `reason` is told to the model when rejecting.",
      inputSchema: ApprovalParamsSchema.extend(ApprovalBodySchema.shape),
    },
    async ({ sessionId, toolCallId, ...decision }) =>
      viaRoute(
        call("POST", sessionPath(sessionId, `/approvals/${encodeURIComponent(toolCallId)}`), {
          json: decision,
        }),
      ),
  );

  server.registerTool(
    "list_sessions",
    {
      title: "List sessions",
      description:
        "The caller's sessions in id order, a page at a time: {sessions: [{sessionId, createdAt, lastActivityAt, parentSession}], nextCursor}. Pass nextCursor back as cursor for the next page. Read a session's status with get_run.",
      inputSchema: z.object({
        limit: z.number().int().min(1).max(MAX_LIST_LIMIT).optional(),
        cursor: z.string().min(1).max(2_048).optional(),
      }),
      annotations: { readOnlyHint: true },
    },
    async ({ limit, cursor }) => {
      const query = new URLSearchParams();
      if (limit !== undefined) query.set("limit", String(limit));
      if (cursor !== undefined) query.set("cursor", cursor);
      const suffix = query.size > 0 ? `?${query}` : "";
      return viaRoute(call("GET", `/v1/sessions${suffix}`));
    },
  );

  server.registerTool(
    "abort_run",
    {
      title: "Abort a session's run",
      description:
        "Stop the session's live run (it ends as aborted, keeping what it stored). Answers the messages it had queued and will not read.",
      inputSchema: AbortBodySchema.extend({ sessionId: SessionIdSchema }),
      annotations: { destructiveHint: true },
    },
    async ({ sessionId, ...body }) =>
      viaRoute(call("POST", sessionPath(sessionId, "/abort"), { json: body })),
  );
}
