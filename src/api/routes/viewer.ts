/**
 * The session viewer (docs/api.md, "Session viewer"): the page `GET /view/sessions/{id}`, open
 * because it holds no data (its script asks the reader for an API key and reads the session
 * with it), and its data `GET /v1/sessions/{id}/view`, behind the bearer auth like every
 * session route. The offline export (`export?format=html`) is built by `viewerExport`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { SessionRef } from "../../contracts/runs";
import { runWorkflowId } from "../../contracts/runs";
import { temporalRunsUrl } from "../../viewer/links";
import { exportPage, livePage, type ViewerPage } from "../../viewer/page";
import { buildViewModel, type ViewModel } from "../../viewer/view-model";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import { SessionParamsSchema } from "../schemas";
import { problemResponses, refOf, requireSession } from "./common";
import { sessionStatus } from "./sessions";

const HTML_CONTENT_TYPE = "text/html; charset=utf-8";

const viewPage = createRoute({
  method: "get",
  path: "/view/sessions/{sessionId}",
  summary:
    "The session viewer page (HTML, no session data: its script asks for an API key and reads GET /v1/sessions/{id}/view with it)",
  security: [],
  request: { params: SessionParamsSchema },
  responses: {
    200: { description: "The page", content: { "text/html": { schema: z.string() } } },
    ...problemResponses(),
  },
});

const viewData = createRoute({
  method: "get",
  path: "/v1/sessions/{sessionId}/view",
  summary:
    "The session as the viewer shows it: every entry with its tree links, labels, blocks (text, thinking, tool calls, outputs, diffs) and usage, and the session's status",
  request: { params: SessionParamsSchema },
  responses: {
    200: {
      description: "The view model (src/viewer/view-model.ts) with `status`",
      content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
    },
    ...problemResponses(),
  },
});

/** The view model of a stored session (the contiguous prefix while a run writes). */
async function viewModelOf(deps: RouteContext, ref: SessionRef) {
  const presence = await requireSession(deps, ref);
  const { entries } = presence.header
    ? await deps.store.readEntries(ref, { untilGap: true })
    : { entries: [] };
  const temporalUi = deps.config.viewer?.temporalUi;
  const model: ViewModel = buildViewModel(
    ref.sessionId,
    presence.header,
    entries.map(({ entry }) => entry),
    temporalUi
      ? { temporalRunsUrl: temporalRunsUrl(temporalUi.url, temporalUi.namespace, runWorkflowId(ref)) }
      : {},
  );
  return { model, status: sessionStatus(presence.run) };
}

/** The single-file offline page of a session (`GET /v1/sessions/{id}/export?format=html`). */
export async function viewerExport(deps: RouteContext, ref: SessionRef): Promise<ViewerPage> {
  return exportPage((await viewModelOf(deps, ref)).model);
}

/** Headers of a viewer page: its policy, and nothing cached, sniffed, framed or referred. */
export function pageHeaders(page: ViewerPage): Record<string, string> {
  return {
    "content-type": HTML_CONTENT_TYPE,
    "content-security-policy": page.contentSecurityPolicy,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
  };
}

export function viewerRoutes(deps: RouteContext) {
  return createRouter()
    .openapi(viewPage, (c) => {
      const page = livePage(c.req.valid("param").sessionId);
      // An HTML body: outside the typed handler's JSON responses, like the export route's.
      return c.body(page.html, 200, pageHeaders(page)) as never;
    })
    .openapi(viewData, async (c) => {
      const { sessionId } = c.req.valid("param");
      const { model, status } = await viewModelOf(deps, refOf(c, sessionId));
      c.header("cache-control", "no-store");
      return c.json({ ...model, status } as Record<string, unknown>, 200);
    });
}
